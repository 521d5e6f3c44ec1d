// The per-ISA loops of the small-batch GEMM (small_gemm.h), each in its own file compiled for its
// instruction set (float_engine/CMakeLists.txt) and called only where the CPU has it.
#pragma once

#include <cstdint>

namespace dv::small_gemm {

struct Args {
  const float* x;
  int64_t ldx, m, k;
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
