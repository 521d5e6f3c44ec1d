// DI-SwiGLU with an 8-bit sigmoid in the stable two-branch form (docs/SPEC.md §4.4).
// E = DiExp(-|g|), sigma = rhad((g >= 0 ? tpos : E) << 7, max(tpos + E, 1)) in [0, 128],
// y = g * sigma * u in int64 with scale (gm * um, gk + uk + 7).
#pragma once

#include <cstdint>

#include "engine/intmath.h"
#include "engine/ops/di_exp.h"

namespace dv {

inline constexpr int64_t kSigmoidFracBits = 7;  // sigma in [0, 2^7]

// sigma(g) * 2^7 for one gate value, given the row's DI-Exp constant tpos.
DV_INLINE constexpr int64_t DiSigmoid(int64_t g, int64_t tpos) {
  const int64_t e = DiExp(WrapNeg(WrapAbs(g)), tpos);
  const int64_t den = Max(WrapAdd(tpos, e), 1);
  const int64_t num = g >= 0 ? tpos : e;
  return RoundHalfAwayDiv(ShiftLeftWrap(num, kSigmoidFracBits), den);
}

// y[i] = gate[i] * sigma(gate[i]) * up[i]; tpos = DiExpTpos(gate row m, gate row k).
DV_INLINE void DiSwiglu(const int32_t* gate, const int32_t* up, int64_t n, int64_t tpos,
                        int64_t* y) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = WrapMul(WrapMul(gate[i], DiSigmoid(gate[i], tpos)), up[i]);
  }
}

}  // namespace dv
