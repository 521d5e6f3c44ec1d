// The attention context: ctx[j] = sum over s of p[s] * v8[s][j], exact in int64
// (docs/SPEC.md §4.6). p in [0, 2^14] (15-bit probabilities), v8 int8; any exact summation
// order gives the same bits, so kernels may split p into hi/lo bytes or accumulate in int32
// blocks while |partial| < 2^31.
#pragma once

#include <cstdint>

#include "engine/intmath.h"

namespace dv {

// p: [s_len] int32; v: [s_len] rows of `stride` int8, the first d used; ctx: [d] int64.
DV_INLINE void ProbTimesV(const int32_t* p, const int8_t* v, int64_t s_len, int64_t stride,
                          int64_t d, int64_t* ctx) {
  for (int64_t j = 0; j < d; ++j) ctx[j] = 0;
  for (int64_t s = 0; s < s_len; ++s) {
    const int64_t ps = p[s];
    if (ps == 0) continue;  // exact: a zero probability adds nothing
    const int8_t* row = v + s * stride;
    for (int64_t j = 0; j < d; ++j) ctx[j] = WrapAdd(ctx[j], ps * row[j]);
  }
}

}  // namespace dv
