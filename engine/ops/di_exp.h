// DI-Exp: e^x for x <= 0 by shift decomposition (docs/SPEC.md §4.2).
// With the row scale (m, k): m_f = m + (m>>1) - (m>>4) ~= m*log2(e), tpos = max(1, rhad(2^k, m_f)),
// then for t = -tpos: q = floor(x / t), r = x - q*t in (t, 0], result = ((r>>1) + tpos) >> min(q,
// 62). The result approximates e^x * tpos; the non-dyadic scale 1/tpos cancels in the ratio that
// consumes it (softmax, sigmoid).
#pragma once

#include <cstdint>

#include "engine/intmath.h"

namespace dv {

// DI-Exp's divisor m_f = m + (m >> 1) - (m >> 4) ~= m * log2(e) for the row mantissa m. It is 0
// only for a wrapped scale (docs/SPEC.md §6.3), where DetLLM divides by zero.
DV_INLINE constexpr int64_t DiExpDivisor(int64_t m) {
  return WrapSub(WrapAdd(m, ShiftRightArith(m, 1)), ShiftRightArith(m, 4));
}

// The per-row constant tpos of DI-Exp for the row scale (m, k).
DV_INLINE constexpr int64_t DiExpTpos(int64_t m, int64_t k) {
  return Max(RoundHalfAwayDiv(ShiftLeftWrap(1, k), DiExpDivisor(m)), 1);
}

// e^x * tpos for one x <= 0, in [0, tpos].
DV_INLINE constexpr int64_t DiExp(int64_t x, int64_t tpos) {
  const int64_t t = WrapNeg(tpos);
  const int64_t q = FloorDiv(x, t);
  const int64_t r = WrapSub(x, WrapMul(q, t));
  const int64_t unshifted = WrapSub(ShiftRightArith(r, 1), t);
  return ShiftRightArith(unshifted, Min(q, 62));
}

}  // namespace dv
