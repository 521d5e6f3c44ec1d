// A float64 matrix product whose every output element is one fixed sum, whatever the machine,
// the SIMD width or the thread count: y[m][n] = (...((0 + x[m][0] w[0][n]) + x[m][1] w[1][n]) ...)
// + x[m][K-1] w[K-1][n], each product and each sum rounded once (no fused multiply-add: the files
// are compiled with -ffp-contract=off). Vector lanes and threads only ever hold different output
// elements, never parts of one sum, so every SIMD level computes the plain triple loop's bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dv {

// The instruction sets the GEMM's kernel is compiled for. kBaseline is the build's target (SSE2
// on x86-64, Advanced SIMD on aarch64, z/Architecture on s390x); the wider ones exist on x86-64.
// All give the same bits (tests/prepare checks it); they differ in speed only.
enum class GemmIsa { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

const char* GemmIsaName(GemmIsa isa);  // "baseline", "avx2", "avx512"
// Throws ExpectedError naming the known levels.
GemmIsa ParseGemmIsa(const std::string& name);
// The levels this CPU and this build can run, baseline first.
std::vector<GemmIsa> SupportedGemmIsas();
// DETVERIFY_PREPARE_ISA when set and non-empty, else the widest supported level. Throws
// ExpectedError for an unknown level or one this CPU lacks.
GemmIsa GemmIsaFromEnvironment();

struct GemmShape {
  int64_t m = 0, k = 0, n = 0;
  int64_t ldx = 0, ldw = 0, ldy = 0;  // row strides (elements); 0 means k, n, n
};

struct GemmRun {
  int threads = 1;  // >= 1: output columns are split across threads
  GemmIsa isa = GemmIsa::kBaseline;
  // Row m needs only columns n <= m (causal scores): column panels entirely right of a row
  // block are skipped and left unwritten.
  bool causal_columns = false;
  // Row m needs only the terms k <= m (probabilities times values, the rest exact zeros): a row
  // block's sums stop after its last row's k. The skipped terms would add +-0 to a sum that is
  // never -0, so the values do not change.
  bool causal_terms = false;
};

// y[M, N] = x[M, K] * w[K, N] (row-major, strides from `shape`).
void GemmFixedOrder(const double* x, const double* w, double* y, const GemmShape& shape,
                    const GemmRun& run);

// The kernels behind GemmFixedOrder, one per GemmIsa (fixed_order_gemm_kernel.h): columns
// [p0 * 8, p1 * 8) of y, with `panel` scratch of k * 8 doubles. The x86-64 levels exist only in
// x86-64 builds.
void GemmPanelsBaseline(const double* x, const double* w, double* y, const GemmShape& s, int64_t p0,
                        int64_t p1, bool causal_columns, bool causal_terms, double* panel);
void GemmPanelsAvx2(const double* x, const double* w, double* y, const GemmShape& s, int64_t p0,
                    int64_t p1, bool causal_columns, bool causal_terms, double* panel);
void GemmPanelsAvx512(const double* x, const double* w, double* y, const GemmShape& s, int64_t p0,
                      int64_t p1, bool causal_columns, bool causal_terms, double* panel);
inline constexpr int64_t kGemmPanel = 8;  // output columns per packed panel

}  // namespace dv
