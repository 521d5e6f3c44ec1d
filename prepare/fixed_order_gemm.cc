// Compiled with -ffp-contract=off and -O3 (prepare/CMakeLists.txt): the compiler vectorizes the
// panel loop across output columns (independent sums), which changes no result.
#include "prepare/fixed_order_gemm.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace dv {
namespace {

constexpr int64_t kPanel = 8;  // output columns per packed panel
constexpr int64_t kRows = 4;   // output rows per micro-kernel call

// acc[r][c] = sum over k < kend of x[r][k] * panel[k][c], k increasing from +0.
template <size_t R>
void MicroKernel(const double* x, int64_t ldx, const double* panel, int64_t kend, double* y,
                 int64_t ldy, int64_t cols) {
  double acc[R][kPanel] = {};
  for (int64_t k = 0; k < kend; ++k) {
    const double* wk = panel + k * kPanel;
    for (size_t r = 0; r < R; ++r) {
      const double xv = x[static_cast<int64_t>(r) * ldx + k];
      for (int64_t c = 0; c < kPanel; ++c) acc[r][c] += xv * wk[c];
    }
  }
  for (size_t r = 0; r < R; ++r) {
    for (int64_t c = 0; c < cols; ++c) y[static_cast<int64_t>(r) * ldy + c] = acc[r][c];
  }
}

void PanelRange(const double* x, const double* w, double* y, const GemmShape& s, int64_t p0,
                int64_t p1, bool causal_columns, bool causal_terms) {
  std::vector<double> panel(static_cast<size_t>(s.k * kPanel));
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * kPanel;
    const int64_t cols = std::min(kPanel, s.n - n0);
    // Pack w[:, n0 .. n0 + cols) into a zero-padded [K, kPanel] panel.
    for (int64_t k = 0; k < s.k; ++k) {
      for (int64_t c = 0; c < kPanel; ++c) {
        panel[static_cast<size_t>(k * kPanel + c)] = c < cols ? w[k * s.ldw + n0 + c] : 0.0;
      }
    }
    // With causal columns, row blocks that end before the panel's first column need none of
    // it; they are left unwritten.
    int64_t m = 0;
    if (causal_columns) {
      while (m + kRows <= s.m && m + kRows - 1 < n0) m += kRows;
    }
    for (; m < s.m; m += kRows) {
      const int64_t rows = std::min(kRows, s.m - m);
      const int64_t kend = causal_terms ? std::min(s.k, m + rows) : s.k;
      const double* xm = x + m * s.ldx;
      double* ym = y + m * s.ldy + n0;
      switch (rows) {
        case 4:
          MicroKernel<4>(xm, s.ldx, panel.data(), kend, ym, s.ldy, cols);
          break;
        case 3:
          MicroKernel<3>(xm, s.ldx, panel.data(), kend, ym, s.ldy, cols);
          break;
        case 2:
          MicroKernel<2>(xm, s.ldx, panel.data(), kend, ym, s.ldy, cols);
          break;
        default:
          MicroKernel<1>(xm, s.ldx, panel.data(), kend, ym, s.ldy, cols);
          break;
      }
    }
  }
}

}  // namespace

void GemmFixedOrder(const double* x, const double* w, double* y, const GemmShape& shape,
                    int threads, bool causal_columns, bool causal_terms) {
  GemmShape s = shape;
  if (s.ldx == 0) s.ldx = s.k;
  if (s.ldw == 0) s.ldw = s.n;
  if (s.ldy == 0) s.ldy = s.n;
  if (s.m <= 0 || s.n <= 0) return;
  const int64_t panels = (s.n + kPanel - 1) / kPanel;
  const int64_t t = std::max<int64_t>(1, std::min<int64_t>(threads, panels));
  if (t == 1) {
    PanelRange(x, w, y, s, 0, panels, causal_columns, causal_terms);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t i = 0; i < t; ++i) {
    const int64_t p0 = panels * i / t, p1 = panels * (i + 1) / t;
    pool.emplace_back(PanelRange, x, w, y, std::cref(s), p0, p1, causal_columns, causal_terms);
  }
  for (std::thread& th : pool) th.join();
}

}  // namespace dv
