// The BLAS calls of the float engine (OpenBLAS, cblas): what a float user's framework runs on a
// CPU. Row-major; sizes are checked to fit BLAS's 32-bit integers by CheckFloatModelConfig.
#pragma once

#include <cstdint>
#include <string>

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
// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64 (SkylakeX kernels); 2-16
// rows: small-batch GEMM avx512" and the like: the GEMMs a float row of this precision runs on
// this machine (bf16: "1-64 rows: small-batch GEMM avx512, bf16 weights", FloatQwen3's rule).
std::string BlasDescription(FloatDType dtype = FloatDType::kFp32);

}  // namespace dv
