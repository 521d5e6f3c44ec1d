// The per-ISA loops of the small-batch GEMM (small_gemm.h), each in its own file compiled for its
// instruction set (float_engine/CMakeLists.txt) and called only where the CPU has it.
#pragma once

#include <cstdint>

namespace dv::small_gemm {

// How a kernel wants the rows of x: in blocks of `block` rows (the last block may have fewer,
// mr), each block's rows interleaved `lanes` floats at a time -- step s of row r of a block at
// x[(first + s * mr + r) * lanes], first = b * steps * block for block b, steps = ceil(k / lanes)
// -- and zeros past k (the lanes a masked load gives 0). The MR vectors one step of a tile reads
// are then one contiguous run, not MR rows k floats apart: with rows 4 or 12 KiB apart the
// AVX-512 8-row tile streamed 1.4-1.7x slower on AMD Zen 4 (docs/RESULTS.md, "The float 8-row
// tile with its x rows interleaved").
struct XLayout {
  int64_t lanes, block;
};
// Floats from one packed block of rows to the next (the kernels' and the packer's one formula).
inline int64_t PackedBlockFloats(int64_t k, XLayout layout) {
  return (k + layout.lanes - 1) / layout.lanes * layout.lanes * layout.block;
}
XLayout XLayoutAvx2(int64_t m);
XLayout XLayoutAvx512(int64_t m);

// Floats PackX writes, and the packing itself (small_gemm.cc; plain code, any ISA).
int64_t PackedXFloats(int64_t m, int64_t k, XLayout layout);
void PackX(const float* x, int64_t ldx, int64_t m, int64_t k, XLayout layout, float* packed);

struct Args {
  const float* x;  // packed by PackX with the kernel's XLayout
  int64_t m, k;
  const float* w;      // fp32 weights, or
  const uint16_t* wb;  // bfloat16 weights (their bits; null when w is used), widened exactly
  int64_t n;
  float* y;
  int64_t ldy;
};

// Outputs of weight rows [j0, j1) for every x row: each group of weight rows (4 with AVX-512, 2
// with AVX2) against every block of x rows while the group is hot in L1, so each weight byte
// comes from memory once.
void RowsAvx2(const Args& g, int64_t j0, int64_t j1);
void RowsAvx512(const Args& g, int64_t j0, int64_t j1);

// o[d] = sum_j p[j] * v[j * ldv + :] for j = 0 .. s-1 in order, by fused multiply-adds from 0.
void VecMatAvx2(const float* p, int64_t s, const float* v, int64_t ldv, int64_t d, float* o);
void VecMatAvx512(const float* p, int64_t s, const float* v, int64_t ldv, int64_t d, float* o);

}  // namespace dv::small_gemm
