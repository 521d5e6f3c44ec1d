// The BLAS calls of the float engine (OpenBLAS, cblas): what a float user's framework runs on a
// CPU. Row-major; sizes are checked to fit BLAS's 32-bit integers by CheckFloatModelConfig.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/run_kinds.h"

namespace dv {

// y[m, n] = x[m, k] . w[n, k]^T, w in nn.Linear's [out, in] layout; x rows `ldx` apart, y rows
// `ldy` apart. m == 1 goes to sgemv (OpenBLAS 0.3.21's sgemm packs both operands even for one
// row: 2-5x slower on the weight stream, measured), larger m to sgemm; BLAS picks its kernels,
// blocking and thread split from the shape.
void MatmulXWt(const float* x, int64_t ldx, int64_t m, int64_t k, const float* w, int64_t n,
               float* y, int64_t ldy);

// c[m, n] = a[m, k] . b[k, n] (plain row-major product; lda/ldb/ldc as in cblas).
void MatmulAB(const float* a, int64_t lda, int64_t m, int64_t k, const float* b, int64_t ldb,
              int64_t n, float* c, int64_t ldc);

// openblas_set_num_threads(threads) for threads >= 1 (process-wide); 0 leaves OpenBLAS's own
// choice (OPENBLAS_NUM_THREADS, else every CPU).
void SetBlasThreads(int threads);
int BlasThreads();
// OpenBLAS's kernels for this CPU. A DYNAMIC_ARCH OpenBLAS picks its kernel table by CPU model
// when it loads, and 0.3.21 (Debian 12's) picks Prescott's SSE3 kernels for Intel models it does
// not list -- Emerald Rapids (family 6, model 0xCF) among them: its model switch has no case for
// that extended model and falls into the Pentium 4 case -- where SkylakeX's run its sgemv at
// 1.8x and its sgemm at 3.3x the speed (docs/RESULTS.md). So, before the first BLAS call
// (EnsureBlasCore, which every function here calls), a core whose kernels predate AVX2 + FMA on
// a CPU that has them is replaced as OpenBLAS itself chooses for an x86-64 CPU it does not know:
// SkylakeX with AVX-512, else Haswell. OPENBLAS_CORETYPE, when the user sets it, always stands.
struct BlasCpu {
  bool avx2_fma = false;  // AVX2 and FMA, the OS saving the registers
  bool avx512 = false;    // AVX-512 F, VL, BW, DQ and CD, the OS saving the registers
};
// The core to choose instead of `loaded` (OpenBLAS's name for the core it chose), or "" when
// the load's choice stands: the user set OPENBLAS_CORETYPE, the CPU lacks AVX2 + FMA, or the
// loaded core is not one of 0.3.21's pre-AVX2 cores (names compared without case).
std::string BetterBlasCore(std::string_view loaded, bool user_forced, const BlasCpu& cpu);
// Makes OpenBLAS choose its kernel table again, as named by `core` (OPENBLAS_CORETYPE's names);
// true when it now runs that core. False, changing nothing, where the OpenBLAS linked has no
// DYNAMIC_ARCH (no gotoblas_dynamic_init) or the host is not x86-64 ELF (Linux and the like).
// No BLAS call may run meanwhile.
bool ChooseBlasCore(const std::string& core);
// The check above, now: what OpenBLAS runs (`loaded`) and, where it chose another core, that
// core's name (`chosen`; "" when the choice stood or could not be made).
struct BlasCoreFix {
  std::string loaded;
  std::string chosen;
};
BlasCoreFix FixBlasCore();
// FixBlasCore once per process (thread-safe; cheap after the first call).
void EnsureBlasCore();
// openblas_get_corename(): "SkylakeX", "Haswell", "Prescott", ...
std::string BlasCoreName();

// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64 (SkylakeX kernels); 2-16
// rows: small-batch GEMM avx512" and the like: the GEMMs a float row of this precision runs on
// this machine (bf16: "1-64 rows: small-batch GEMM avx512, bf16 weights", FloatQwen3's rule);
// where EnsureBlasCore chose another core, "(SkylakeX kernels, chosen by CPU features: its load
// picked Prescott)".
std::string BlasDescription(FloatDType dtype = FloatDType::kFp32);

}  // namespace dv
