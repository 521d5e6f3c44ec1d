// DI-Softmax with 15-bit probabilities (docs/SPEC.md §4.3).
// Row max over valid entries, xd = x - max (0 for masked entries), exps = DiExp(xd) with masked
// entries zeroed, p = int32(rhad(exps << 14, max(sum exps, 1))) in [0, 2^14], scale 2^-14.
// A row with no valid entry gives all zeros.
#pragma once

#include <cstdint>

#include "engine/intmath.h"
#include "engine/ops/di_exp.h"

namespace dv {

inline constexpr int64_t kProbBits = 15;                            // P_OUT_BITS
inline constexpr int64_t kProbOne = int64_t{1} << (kProbBits - 1);  // 2^14 = probability 1.0

// scores: [n] int32 at row scale (m, k); valid: [n] (nonzero = visible; null = all visible);
// exps: [n] int64
// scratch; probs: [n] int32. Returns tpos (a diagnostic; the probabilities do not depend on it
// beyond the ratio).
// One probability from its exp and the row's clamped sum of exps (>= 1).
DV_INLINE constexpr int32_t SoftmaxProb(int64_t exp, int64_t denom) {
  return static_cast<int32_t>(RoundHalfAwayDiv(ShiftLeftWrap(exp, kProbBits - 1), denom));
}

DV_INLINE int64_t DiSoftmax(const int32_t* scores, const uint8_t* valid, int64_t n, int64_t m,
                            int64_t k, int64_t* exps, int32_t* probs) {
  int64_t row_max = kInt64Min + 1;
  bool any_valid = false;
  for (int64_t i = 0; i < n; ++i) {
    if (valid == nullptr || valid[i]) {
      row_max = Max(row_max, scores[i]);
      any_valid = true;
    }
  }
  if (!any_valid) row_max = 0;
  const int64_t tpos = DiExpTpos(m, k);
  int64_t denom = 0;
  for (int64_t i = 0; i < n; ++i) {
    exps[i] = (valid == nullptr || valid[i]) ? DiExp(WrapSub(scores[i], row_max), tpos) : 0;
    denom = WrapAdd(denom, exps[i]);
  }
  denom = Max(denom, 1);
  for (int64_t i = 0; i < n; ++i) probs[i] = SoftmaxProb(exps[i], denom);
  return tpos;
}

}  // namespace dv
