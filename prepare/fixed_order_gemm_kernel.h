// The GEMM kernel of fixed_order_gemm.h, included once per instruction set by
// fixed_order_gemm_{baseline,avx2,avx512}.cc (each compiled with its own -m flags and
// -ffp-contract=off) with DV_GEMM_PANELS naming the function and DV_GEMM_ROWS the rows per
// micro-kernel call. The compiler vectorizes the 8 columns of a panel: lanes are different output
// elements, each summed over k in increasing order from +0, so every build gives the same bits.
// Nothing here instantiates a library template (no std::vector, no std::min): an inline function
// emitted with AVX-512 code could be the copy the linker keeps for every caller.
#include "prepare/fixed_order_gemm.h"

namespace dv {
namespace {

constexpr int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }

// acc[r][c] = sum over k < kend of x[r][k] * panel[k][c], k increasing from +0.
template <size_t R>
void MicroKernel(const double* x, int64_t ldx, const double* panel, int64_t kend, double* y,
                 int64_t ldy, int64_t cols) {
  double acc[R][kGemmPanel] = {};
  for (int64_t k = 0; k < kend; ++k) {
    const double* wk = panel + k * kGemmPanel;
    for (size_t r = 0; r < R; ++r) {
      const double xv = x[static_cast<int64_t>(r) * ldx + k];
      for (int64_t c = 0; c < kGemmPanel; ++c) acc[r][c] += xv * wk[c];
    }
  }
  for (size_t r = 0; r < R; ++r) {
    for (int64_t c = 0; c < cols; ++c) y[static_cast<int64_t>(r) * ldy + c] = acc[r][c];
  }
}

template <size_t R>
void RowBlock(size_t rows, const double* x, int64_t ldx, const double* panel, int64_t kend,
              double* y, int64_t ldy, int64_t cols) {
  if constexpr (R == 1) {
    MicroKernel<1>(x, ldx, panel, kend, y, ldy, cols);
  } else {
    if (rows == R) {
      MicroKernel<R>(x, ldx, panel, kend, y, ldy, cols);
    } else {
      RowBlock<R - 1>(rows, x, ldx, panel, kend, y, ldy, cols);
    }
  }
}

}  // namespace

void DV_GEMM_PANELS(const double* x, const double* w, double* y, const GemmShape& s, int64_t p0,
                    int64_t p1, bool causal_columns, bool causal_terms, double* panel) {
  constexpr int64_t kRows = DV_GEMM_ROWS;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * kGemmPanel;
    const int64_t cols = Min(kGemmPanel, s.n - n0);
    // Pack w[:, n0 .. n0 + cols) into a zero-padded [K, 8] panel.
    for (int64_t k = 0; k < s.k; ++k) {
      for (int64_t c = 0; c < kGemmPanel; ++c) {
        panel[k * kGemmPanel + c] = c < cols ? w[k * s.ldw + n0 + c] : 0.0;
      }
    }
    int64_t m = 0;
    if (causal_columns) {
      while (m + kRows <= s.m && m + kRows - 1 < n0) m += kRows;
    }
    for (; m < s.m; m += kRows) {
      const int64_t rows = Min(kRows, s.m - m);
      const int64_t kend = causal_terms ? Min(s.k, m + rows) : s.k;
      RowBlock<static_cast<size_t>(kRows)>(static_cast<size_t>(rows), x + m * s.ldx, s.ldx, panel,
                                           kend, y + m * s.ldy + n0, s.ldy, cols);
    }
  }
}

}  // namespace dv
