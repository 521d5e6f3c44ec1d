// Integer RoPE from Q14 int16 tables, HF rotate-half layout (docs/SPEC.md §4.5):
// out = rshift_round(x * cos[pos] + rotate_half(x) * sin[pos], 14), rotate_half(x) =
// (-x[d/2:], x[:d/2]). The input's scale is unchanged.
#pragma once

#include <cstdint>

#include "engine/intmath.h"

namespace dv {

inline constexpr int64_t kRopeFracBits = 14;

// x: [d] int64 rotated in place with the table rows cos_row, sin_row ([d] int16 each).
DV_INLINE void ApplyIntRope(int64_t* x, int64_t d, const int16_t* cos_row, const int16_t* sin_row) {
  const int64_t half = d / 2;
  for (int64_t j = 0; j < half; ++j) {
    const int64_t x1 = x[j];
    const int64_t x2 = x[j + half];
    // rot[j] = -x2 for j < half, rot[j + half] = x1.
    x[j] = RoundingShiftRight(WrapAdd(WrapMul(x1, cos_row[j]), WrapMul(WrapNeg(x2), sin_row[j])),
                              kRopeFracBits);
    x[j + half] = RoundingShiftRight(
        WrapAdd(WrapMul(x2, cos_row[j + half]), WrapMul(x1, sin_row[j + half])), kRopeFracBits);
  }
}

}  // namespace dv
