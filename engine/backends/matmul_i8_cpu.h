// The cpu backend's int8 GEMM: packed weight layout and the per-ISA kernel table.
//
// Packed layout (all ISAs): the n output columns are cut into panels of `panel_cols` (NR)
// columns, the k inputs into groups of 4; panel p holds, for each group g in order, NR columns
// of 4 consecutive k values each:
//
//   byte(p, g, c, i) = W[4g + i][p*NR + c]      at offset ((p * groups + g) * NR + c) * 4 + i
//
// so one panel is a contiguous K x NR block that a kernel streams front to back, and the whole
// matrix is read once per product, in address order. Columns past n and k values past k are
// zero bytes. Kernels with `offset_weights` store W + 128 as an unsigned byte (W ^ 0x80); their
// products carry an extra 128 * sum_k a[k] that the kernel subtracts (exactly, modulo 2^32,
// like every int32 sum here: the true result fits int32, so wrapped partial sums cannot change
// it).
#pragma once

#include <cstdint>

#include "engine/backends/cpu_features.h"

namespace dv {

struct MatmulI8Args {
  const int8_t* a = nullptr;  // [m, lda] int8, row-major; columns [k, lda) are 0
  int64_t m = 0;
  int64_t k = 0;
  int64_t lda = 0;  // k rounded up to a multiple of 4 (the caller pads rows when k % 4 != 0)
  const uint8_t* panels = nullptr;  // packed weights (layout above)
  int64_t n = 0;
  const int32_t* row_sums = nullptr;  // [m] sum_k a[i][k], for offset kernels
  int32_t* c = nullptr;               // [m, n] int32, row-major
  // Software prefetch: how many bytes ahead of its weight loads the kernel asks for the weights
  // (0: none; kernels without prefetch ignore it). Never changes a result.
  int64_t prefetch_bytes = 0;
};

struct MatmulI8Kernel {
  CpuIsa isa = CpuIsa::kScalar;
  int64_t panel_cols = 16;
  bool offset_weights = false;
  // The prefetch distance this kernel runs at unless told otherwise (MatmulI8Args, 0: the kernel
  // has no software prefetch). Measured on the hosts docs/RESULTS.md names.
  int64_t prefetch_bytes = 0;
  // c[:, p*NR .. p*NR+NR) for the panels p in [panel_begin, panel_end), every row of a.
  void (*matmul)(const MatmulI8Args& args, int64_t panel_begin, int64_t panel_end) = nullptr;
  // sums[i] = sum_k a[i][k] for i in [0, m), rows lda bytes apart; offset kernels only (null
  // otherwise).
  void (*row_sums)(const int8_t* a, int64_t m, int64_t lda, int32_t* sums) = nullptr;
  // The GEMV's memory traffic without its arithmetic: reads bytes [0, n) (n a multiple of 64)
  // with the kernel's loads and, when prefetch_bytes > 0, its software prefetch that far ahead,
  // and returns a wrapping sum of the 64-bit words, so the reads cannot be elided. The
  // memory-bandwidth probe of the benchmark.
  uint64_t (*stream_read)(const uint8_t* p, int64_t n, int64_t prefetch_bytes) = nullptr;
};

// The kernel of one ISA level; the caller checks CpuSupports(isa) first.
const MatmulI8Kernel& MatmulI8KernelFor(CpuIsa isa);

// Defined in the per-ISA translation units (each compiled with its own target flags).
const MatmulI8Kernel* MatmulI8KernelScalar();
const MatmulI8Kernel* MatmulI8KernelNeon();
const MatmulI8Kernel* MatmulI8KernelNeonDot();
const MatmulI8Kernel* MatmulI8KernelAvx2();
const MatmulI8Kernel* MatmulI8KernelAvx512Vnni();
const MatmulI8Kernel* MatmulI8KernelAmx();

// Panels of n columns, groups of k inputs, and bytes per panel. (Out of line on purpose: the
// per-ISA translation units are compiled with wider target flags, and an inline function they
// instantiated could be the copy the linker keeps for everyone.)
int64_t MatmulI8Panels(int64_t n, const MatmulI8Kernel& kernel);
int64_t MatmulI8Groups(int64_t k);
int64_t MatmulI8PanelBytes(int64_t k, const MatmulI8Kernel& kernel);

// Writes panels [panel_begin, panel_end) of w8t ([k, n] int8 row-major) into `out` (the whole
// packed buffer) in the kernel's layout and encoding.
void PackWeightPanelsI8(const int8_t* w8t, int64_t k, int64_t n, const MatmulI8Kernel& kernel,
                        int64_t panel_begin, int64_t panel_end, uint8_t* out);

}  // namespace dv
