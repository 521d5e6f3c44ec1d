// Dyadic scales (data, m, k), value = data * m / 2^k: quantize, requantize, residual stream.
// detllm-v1 semantics (docs/SPEC.md §3): 16-bit mantissas in [2^15, 2^16), the exact order of
// roundings DetLLM uses, torch's int64 wrap-around where its headroom runs out.
//
// Every function works on one row (one token, or one (token, head)); no state crosses rows.
#pragma once

#include <cstdint>

#include "engine/intmath.h"

namespace dv {

struct Dyadic {
  int64_t m = 1;
  int64_t k = 0;
};

// Counts the places where DetLLM's int64 arithmetic wraps (SPEC §8). Diagnostic only: the bits
// are those of the wrapped arithmetic either way.
struct WrapCounter {
  int64_t events = 0;
};

inline constexpr int64_t kMantissaBits = 16;
inline constexpr int64_t kMantissaLo = int64_t{1} << (kMantissaBits - 1);  // 2^15
inline constexpr int64_t kMantissaHi = int64_t{1} << kMantissaBits;        // 2^16
inline constexpr int64_t kResidualMaxBits =
    30;  // max|h| <= 2^30 after renorm (2^31-1 rounds to 2^30)
inline constexpr int64_t kResidualUpBits = 26;      // exact up-shift targets MSB 26
inline constexpr int64_t kRowColPreShiftBits = 45;  // requant_i8_rowcol headroom guard

// round(num * 2^e / den), ties away from zero: the numerator or the denominator is shifted left.
DV_INLINE constexpr int64_t ScaledRoundDiv(int64_t num, int64_t den, int64_t e) {
  return RoundHalfAwayDiv(ShiftLeftWrap(num, Max(e, 0)), ShiftLeftWrap(den, Max(-e, 0)));
}

// m / 2^e ~= num / den with m in [2^15, 2^16); relative error <= 1/(2^16 - 1) for num, den >= 1.
// Wrapped (non-positive) inputs follow the same formulas (SPEC §3.1).
DV_INLINE constexpr Dyadic FitDyadicRatio(int64_t num, int64_t den) {
  int64_t e = (kMantissaBits - 1) - (Ilog2Floor(num) - Ilog2Floor(den));
  int64_t m = ScaledRoundDiv(num, den, e);
  const int64_t adj = (m >= kMantissaHi ? -1 : 0) + (m < kMantissaLo ? 1 : 0);
  if (adj != 0) {
    e += adj;
    m = ScaledRoundDiv(num, den, e);
  }
  if (m >= kMantissaHi) {
    m = RoundingShiftRight(m, 1);
    e -= 1;
  }
  return {m, e};
}

// Renormalises (m, k) so m lands in [2^15, 2^16): exact when m grows, rounded (rshift_round)
// when it shrinks. Returns (m', k + sh).
DV_INLINE constexpr Dyadic NormScale(int64_t m, int64_t k) {
  int64_t sh = (kMantissaBits - 1) - Ilog2Floor(Max(m, 1));
  int64_t m2 = RoundingShiftRight(ShiftLeftWrap(m, Max(sh, 0)), Max(-sh, 0));
  if (m2 >= kMantissaHi) {
    m2 = RoundingShiftRight(m2, 1);
    sh -= 1;
  }
  return {m2, WrapAdd(k, sh)};
}

// max over i of |x[i]| (torch abs: |INT64_MIN| stays INT64_MIN), clamped to >= 1.
template <typename T>
DV_INLINE int64_t MaxAbsClamped(const T* x, int64_t n) {
  int64_t a = 1;
  for (int64_t i = 0; i < n; ++i) a = Max(a, WrapAbs(static_cast<int64_t>(x[i])));
  return a;
}

// One int8 of a per-row quantization with max |x| = a (a >= 1): sat(rhad(x*127, a)).
DV_INLINE constexpr int8_t QuantElement(int64_t x, int64_t a) {
  return SaturateToInt8(RoundHalfAwayDiv(WrapMul(x, 127), a));
}

// The int8 row's scale: fit(a*s.m / 127) at s.k, for max |x| = a and the normalised row scale s.
DV_INLINE constexpr Dyadic QuantScale(int64_t a, Dyadic s) {
  const Dyadic r = FitDyadicRatio(WrapMul(a, s.m), 127);
  return {r.m, WrapAdd(s.k, r.k)};
}

// Symmetric per-row int8 quantization of x[n] with row scale (m, k):
// (m, k) = NormScale(m, k); a = max|x|; x8 = sat(rhad(x*127, a)); scale = fit(a*m / 127).
// a*m wraps past int64 when a >= 2^48 (counted in `wraps` when given).
template <typename T>
DV_INLINE Dyadic QuantI8PerToken(const T* x, int64_t n, int64_t m, int64_t k, int8_t* x8,
                                 WrapCounter* wraps = nullptr) {
  const Dyadic s = NormScale(m, k);
  const int64_t a = MaxAbsClamped(x, n);
  for (int64_t i = 0; i < n; ++i) x8[i] = QuantElement(static_cast<int64_t>(x[i]), a);
  if (wraps != nullptr && MulOverflows(a, s.m)) ++wraps->events;
  return QuantScale(a, s);
}

// Requantizes an int32 GEMM row P[n] times per-column mantissas col_m[n] to about target_bits
// of magnitude with one rshift_round: y = int32(rshift_round(P*col_m, sh)). Returns sh; the row
// scale becomes (row_m, row_k + col_k - sh).
// Its shift for the row's max |P*col_m| = a (a >= 1).
DV_INLINE constexpr int64_t RequantShift(int64_t a, int64_t target_bits) {
  return Max(Ilog2Floor(a) - (target_bits - 1), 0);
}
DV_INLINE int64_t RequantI32Common(const int32_t* p, const int64_t* col_m, int64_t n,
                                   int64_t target_bits, int32_t* y) {
  int64_t a = 1;
  for (int64_t i = 0; i < n; ++i) a = Max(a, WrapAbs(WrapMul(p[i], col_m[i])));
  const int64_t sh = RequantShift(a, target_bits);
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<int32_t>(RoundingShiftRight(WrapMul(p[i], col_m[i]), sh));
  }
  return sh;
}

// Requantizes an int64 row P[n] times col_m[n] straight to per-row int8 (division based, full
// +-127 range), after a rounded pre-shift that keeps |s|*127 inside int64 (45-bit guard).
// Returns the row scale (m, row_k + col_k + e - sh). `s` is scratch of n int64.
// Its pre-shift for the row's max |P*col_m| = a, and its row scale from the (pre-shifted) max a.
DV_INLINE constexpr int64_t RowColPreShift(int64_t a) {
  return Max(Ilog2Floor(a) - kRowColPreShiftBits, 0);
}
DV_INLINE constexpr Dyadic RowColScale(int64_t a, int64_t row_m, int64_t row_k, int64_t col_k,
                                       int64_t sh) {
  const Dyadic r = FitDyadicRatio(WrapMul(a, row_m), 127);
  return {r.m, WrapSub(WrapAdd(WrapAdd(row_k, col_k), r.k), sh)};
}
DV_INLINE Dyadic RequantI8RowCol(const int64_t* p, const int64_t* col_m, int64_t n, int64_t row_m,
                                 int64_t row_k, int64_t col_k, int64_t* s, int8_t* y8,
                                 WrapCounter* wraps = nullptr) {
  int64_t a = 1;
  for (int64_t i = 0; i < n; ++i) {
    s[i] = WrapMul(p[i], col_m[i]);
    a = Max(a, WrapAbs(s[i]));
  }
  const int64_t sh = RowColPreShift(a);
  if (sh > 0) {
    a = 1;
    for (int64_t i = 0; i < n; ++i) {
      s[i] = RoundingShiftRight(s[i], sh);
      a = Max(a, WrapAbs(s[i]));
    }
  }
  for (int64_t i = 0; i < n; ++i) y8[i] = QuantElement(s[i], a);
  if (wraps != nullptr && MulOverflows(a, row_m)) ++wraps->events;
  return RowColScale(a, row_m, row_k, col_k, sh);
}

// RequantI8Static's denominator s_m << max(shift, 0) (shift = row_k + col_k - s_k); a shift that
// wraps it to 0 is a division by zero.
DV_INLINE constexpr int64_t StaticDenominator(int64_t s_m, int64_t shift) {
  return ShiftLeftWrap(s_m, Max(shift, 0));
}

// One element to int8 at a static dyadic scale s_m / 2^s_k with a single rounding:
// sat(rhad(P*col_m*row_m << max(-shift,0), s_m << max(shift,0))), shift = row_k+col_k-s_k.
DV_INLINE constexpr int8_t RequantI8Static(int64_t p, int64_t row_m, int64_t row_k, int64_t col_m,
                                           int64_t col_k, int64_t s_m, int64_t s_k) {
  const int64_t num = WrapMul(WrapMul(p, col_m), row_m);
  const int64_t shift = WrapSub(WrapAdd(row_k, col_k), s_k);
  return SaturateToInt8(
      RoundHalfAwayDiv(ShiftLeftWrap(num, Max(-shift, 0)), StaticDenominator(s_m, shift)));
}

// Whether a K head's cache entry divides by zero: any channel's RequantI8Static denominator
// (row scale 2^-row_k, channel scale s_m[j] / 2^s_k[j]) wrapped to 0 (SPEC §9). IntQwen3 and the
// device program count it and refuse the call.
DV_INLINE constexpr bool AnyStaticDenominatorZero(int64_t row_k, const int64_t* s_m,
                                                  const int64_t* s_k, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    if (StaticDenominator(s_m[j], WrapSub(row_k, s_k[j])) == 0) return true;
  }
  return false;
}

// Residual stream: int32 h with per-row scale 2^-k_res (m = 1).
//
// ResidualRenorm brings max|h| into [2^26, 2^30] (non-zero rows): a rounded down-shift when
// max|h| >= 2^30, else an exact up-shift to MSB 26. `value(i)` yields the int64 pre-renorm row;
// it is evaluated twice (max, then write) so no scratch is needed. Returns the new k_res.
// The renorm's shifts for the row's max |value| = g (>= 0), each element, and the new k_res.
struct RenormShifts {
  int64_t down = 0, up = 0;
};
DV_INLINE constexpr RenormShifts ResidualRenormShifts(int64_t g) {
  const int64_t lg = Ilog2Floor(Max(g, 1));
  const int64_t down = Max(lg - (kResidualMaxBits - 1), 0);
  int64_t up = g > 0 ? Max(kResidualUpBits - lg, 0) : 0;
  if (down > 0) up = 0;
  return {down, up};
}
DV_INLINE constexpr int32_t RenormElement(int64_t value, RenormShifts s) {
  return static_cast<int32_t>(ShiftLeftWrap(RoundingShiftRight(value, s.down), s.up));
}
DV_INLINE constexpr int64_t RenormK(int64_t k_res, RenormShifts s) {
  return WrapAdd(WrapSub(k_res, s.down), s.up);
}
// One element of ResidualAdd's pre-renorm row: h + the delta d*dm aligned to k_res
// (rel = dk - k_res: rounded down when finer, shifted up exactly when coarser).
DV_INLINE constexpr int64_t ResidualSum(int32_t h, int32_t d, int64_t dm, int64_t rel) {
  const int64_t aligned =
      ShiftLeftWrap(RoundingShiftRight(WrapMul(d, dm), Max(rel, 0)), Max(WrapNeg(rel), 0));
  return WrapAdd(h, aligned);
}

template <typename ValueFn>
DV_INLINE int64_t ResidualRenormWith(ValueFn value, int64_t n, int64_t k_res, int32_t* h) {
  int64_t g = 0;
  for (int64_t i = 0; i < n; ++i) g = Max(g, WrapAbs(value(i)));
  const RenormShifts s = ResidualRenormShifts(g);
  for (int64_t i = 0; i < n; ++i) h[i] = RenormElement(value(i), s);
  return RenormK(k_res, s);
}

// h = renorm(d * dm) at scale 2^-dk (embedding rows). Returns k_res.
template <typename T>
DV_INLINE int64_t ResidualFromDelta(const T* d, int64_t n, int64_t dm, int64_t dk, int32_t* h) {
  return ResidualRenormWith([&](int64_t i) { return WrapMul(static_cast<int64_t>(d[i]), dm); }, n,
                            dk, h);
}

// h (scale 2^-k_res) += d * dm / 2^dk, in place. The delta is aligned to k_res (rounded down
// when finer, shifted up exactly when coarser); h itself is never shifted before the add.
// Returns the new k_res.
DV_INLINE int64_t ResidualAdd(int32_t* h, int64_t n, int64_t k_res, const int32_t* d, int64_t dm,
                              int64_t dk) {
  const int64_t rel = WrapSub(dk, k_res);
  // h is overwritten in the second pass of the renorm, after every value(i) of the first pass
  // was read; value(i) of the second pass reads h[i] before h[i] is written.
  return ResidualRenormWith([&](int64_t i) { return ResidualSum(h[i], d[i], dm, rel); }, n, k_res,
                            h);
}

}  // namespace dv
