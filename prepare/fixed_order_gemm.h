// A float64 matrix product whose every output element is one fixed sum, whatever the machine,
// the SIMD width or the thread count: y[m][n] = (...((0 + x[m][0] w[0][n]) + x[m][1] w[1][n]) ...)
// + x[m][K-1] w[K-1][n], each product and each sum rounded once (no fused multiply-add: the file
// is compiled with -ffp-contract=off). Vector lanes and threads only ever hold different output
// elements, never parts of one sum, so the result is the plain triple loop's, bit for bit.
#pragma once

#include <cstdint>

namespace dv {

struct GemmShape {
  int64_t m = 0, k = 0, n = 0;
  int64_t ldx = 0, ldw = 0, ldy = 0;  // row strides (elements); 0 means k, n, n
};

// y[M, N] = x[M, K] * w[K, N] (x row-major with stride ldx, w row-major [K, N]). Splits the
// columns across `threads` (>= 1) threads. With `causal`, row m only needs columns n <= m and
// only the terms k <= m (the products of a causal attention): column panels entirely right of
// a row block are skipped, and a row block's sum stops at its last row's k -- skipped terms are
// then exact zeros of the inputs (masked probabilities), so the values do not change.
void GemmFixedOrder(const double* x, const double* w, double* y, const GemmShape& shape,
                    int threads, bool causal_columns = false, bool causal_terms = false);

}  // namespace dv
