// Kernel selection and weight packing for the cpu backend's int8 GEMM (matmul_i8_cpu.h).
#include "engine/backends/matmul_i8_cpu.h"

#include <string>

#include "engine/backends/backend_error.h"

namespace dv {

const MatmulI8Kernel& MatmulI8KernelFor(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
      return *MatmulI8KernelScalar();
#if defined(DV_CPU_NEON_KERNELS)
    case CpuIsa::kNeon:
      return *MatmulI8KernelNeon();
    case CpuIsa::kNeonDot:
      return *MatmulI8KernelNeonDot();
#else
    case CpuIsa::kNeon:
    case CpuIsa::kNeonDot:
      break;
#endif
#if defined(DV_CPU_X86_KERNELS)
    case CpuIsa::kAvx2:
      return *MatmulI8KernelAvx2();
    case CpuIsa::kAvx512Vnni:
      return *MatmulI8KernelAvx512Vnni();
    case CpuIsa::kAmx:
      return *MatmulI8KernelAmx();
#else
    case CpuIsa::kAvx2:
    case CpuIsa::kAvx512Vnni:
    case CpuIsa::kAmx:
      break;
#endif
  }
  throw BackendError("this build has no int8 GEMM kernel for ISA level '" +
                     std::string(CpuIsaName(isa)) + "'");
}

int64_t MatmulI8Panels(int64_t n, const MatmulI8Kernel& kernel) {
  return (n + kernel.panel_cols - 1) / kernel.panel_cols;
}
int64_t MatmulI8Groups(int64_t k) { return (k + 3) / 4; }
int64_t MatmulI8PanelBytes(int64_t k, const MatmulI8Kernel& kernel) {
  return MatmulI8Groups(k) * kernel.panel_cols * 4;
}

void PackWeightPanelsI8(const int8_t* w8t, int64_t k, int64_t n, const MatmulI8Kernel& kernel,
                        int64_t panel_begin, int64_t panel_end, uint8_t* out) {
  const int64_t nr = kernel.panel_cols;
  const int64_t groups = MatmulI8Groups(k);
  const uint8_t flip = kernel.offset_weights ? 0x80 : 0x00;
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    uint8_t* panel = out + p * MatmulI8PanelBytes(k, kernel);
    const int64_t col0 = p * nr;
    const int64_t cols = n - col0 < nr ? n - col0 : nr;
    for (int64_t g = 0; g < groups; ++g) {
      uint8_t* dst = panel + g * nr * 4;
      for (int64_t i = 0; i < 4; ++i) {
        const int64_t kk = 4 * g + i;
        if (kk >= k) {
          for (int64_t c = 0; c < nr; ++c) dst[c * 4 + i] = 0;
          continue;
        }
        const int8_t* src = w8t + kk * n + col0;
        for (int64_t c = 0; c < cols; ++c) dst[c * 4 + i] = static_cast<uint8_t>(src[c]) ^ flip;
        for (int64_t c = cols; c < nr; ++c) dst[c * 4 + i] = 0;
      }
    }
  }
}

}  // namespace dv
