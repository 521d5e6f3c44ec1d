// Kernel selection for the cpu backend's attention (attention_i8_cpu.h).
#include "engine/backends/attention_i8_cpu.h"

#include <string>

#include "engine/backends/backend_error.h"

namespace dv {

const AttentionI8Kernel& AttentionI8KernelFor(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
    case CpuIsa::kNeon:  // the portable loops; the compiler vectorizes them with NEON
    case CpuIsa::kNeonDot:
      return *AttentionI8KernelScalar();
#if defined(DV_CPU_X86_KERNELS)
    case CpuIsa::kAvx2:
      return *AttentionI8KernelAvx2();
    case CpuIsa::kAvx512Vnni:
    case CpuIsa::kAmx:  // the tiles are for the GEMM; attention stays on AVX-512
      return *AttentionI8KernelAvx512Vnni();
#else
    case CpuIsa::kAvx2:
    case CpuIsa::kAvx512Vnni:
    case CpuIsa::kAmx:
      break;
#endif
  }
  throw BackendError("this build has no attention kernel for ISA level '" +
                     std::string(CpuIsaName(isa)) + "'");
}

}  // namespace dv
