#include "float_engine/blas.h"

#include <cblas.h>

#include "float_engine/small_gemm.h"

namespace dv {
namespace {

blasint B(int64_t v) { return static_cast<blasint>(v); }

}  // namespace

void MatmulXWt(const float* x, int64_t ldx, int64_t m, int64_t k, const float* w, int64_t n,
               float* y, int64_t ldy) {
  if (m == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, B(n), B(k), 1.0f, w, B(k), x, 1, 0.0f, y, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B(m), B(n), B(k), 1.0f, x, B(ldx), w, B(k),
                0.0f, y, B(ldy));
  }
}

void MatmulAB(const float* a, int64_t lda, int64_t m, int64_t k, const float* b, int64_t ldb,
              int64_t n, float* c, int64_t ldc) {
  if (m == 1) {
    // c[n] = b[k, n]^T . a[k]
    cblas_sgemv(CblasRowMajor, CblasTrans, B(k), B(n), 1.0f, b, B(ldb), a, 1, 0.0f, c, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B(m), B(n), B(k), 1.0f, a, B(lda), b,
                B(ldb), 0.0f, c, B(ldc));
  }
}

void SetBlasThreads(int threads) {
  if (threads >= 1) openblas_set_num_threads(threads);
}

int BlasThreads() { return openblas_get_num_threads(); }

std::string BlasDescription(FloatDType dtype) {
  std::string s = openblas_get_config();
  while (!s.empty() && s.back() == ' ') s.pop_back();
  s += std::string(" (") + openblas_get_corename() + " kernels); ";
  const std::string rows = std::to_string(kSmallGemmMaxRows) + " rows: ";
  const SmallGemmIsa small = SmallGemmIsaForThisMachine();
  if (small == SmallGemmIsa::kNone) return s + "2-" + rows + "sgemm";
  const std::string kernel = std::string("small-batch GEMM ") + SmallGemmIsaName(small);
  if (dtype == FloatDType::kBf16) {
    return s + "1-" + std::to_string(kSmallGemmBf16MaxRows) + " rows: " + kernel + ", bf16 weights";
  }
  return s + "2-" + rows + kernel;
}

}  // namespace dv
