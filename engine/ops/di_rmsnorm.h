// DI-RMSNorm: y ~= x / rms(x) at the fixed scale 2^-20, the input's row scale cancels.
// detllm-v1 (docs/SPEC.md §4.1): the row is pre-shifted so max|x'| has its MSB at bit 25,
// rms = max(isqrt(rhad(sum x'^2, n)), 1), y = int32(rhad(x' << 20, rms)). No epsilon.
#pragma once

#include <cstdint>

#include "engine/intmath.h"

namespace dv {

inline constexpr int64_t kNormOutFracBits = 20;  // output scale (m = 1, k = 20)
inline constexpr int64_t kNormPreShiftMsb = 25;  // MSB of max|x'| after the pre-shift

namespace detail {
// The pre-shifted value x' of one element: rounded down-shift or exact up-shift.
DV_INLINE constexpr int64_t NormPreShift(int64_t x, int64_t sh) {
  return ShiftLeftWrap(RoundingShiftRight(x, Max(-sh, 0)), Max(sh, 0));
}
}  // namespace detail

// x: [n] int32/int64, any per-row scale. y: [n] int32, value y / 2^20. All-zero rows give 0.
// The steps of one row's norm, shared by the plain loop below and the cuda backend's block
// program (engine/backends/block_row_ops.h): the pre-shift from the row's max |x|, each
// element's square, the root of the mean, and one output element.
DV_INLINE constexpr int64_t NormShift(int64_t max_abs) {
  return kNormPreShiftMsb - Ilog2Floor(Max(max_abs, 1));
}
DV_INLINE constexpr int64_t NormSquare(int64_t x, int64_t sh) {
  const int64_t xp = detail::NormPreShift(x, sh);
  return WrapMul(xp, xp);
}
DV_INLINE constexpr int64_t NormRms(int64_t sum_of_squares, int64_t n) {
  return Max(Isqrt(RoundHalfAwayDiv(sum_of_squares, n)), 1);
}
DV_INLINE constexpr int32_t NormElement(int64_t x, int64_t sh, int64_t rms) {
  return static_cast<int32_t>(
      RoundHalfAwayDiv(ShiftLeftWrap(detail::NormPreShift(x, sh), kNormOutFracBits), rms));
}

template <typename T, typename Out>
DV_INLINE void DiRmsNormT(const T* x, int64_t n, Out* y, const int64_t* gamma_m) {
  int64_t g = 0;
  for (int64_t i = 0; i < n; ++i) g = Max(g, WrapAbs(static_cast<int64_t>(x[i])));
  const int64_t sh = NormShift(g);
  int64_t ssum = 0;
  for (int64_t i = 0; i < n; ++i) ssum = WrapAdd(ssum, NormSquare(static_cast<int64_t>(x[i]), sh));
  const int64_t rms = NormRms(ssum, n);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v = NormElement(static_cast<int64_t>(x[i]), sh, rms);
    if (gamma_m == nullptr) {
      y[i] = static_cast<Out>(v);
    } else {
      y[i] = static_cast<Out>(WrapMul(v, gamma_m[i]));
    }
  }
}

// Hidden-size norm (gamma folded into the next linear layer): y int32 at scale 2^-20.
template <typename T>
DV_INLINE void DiRmsNorm(const T* x, int64_t n, int32_t* y) {
  DiRmsNormT<T, int32_t>(x, n, y, nullptr);
}

// QK-Norm: (x / rms) * gamma_m[i] in int64 at scale 2^-(20 + gamma_k); gamma_m is signed.
template <typename T>
DV_INLINE void DiRmsNormGamma(const T* x, int64_t n, const int64_t* gamma_m, int64_t* y) {
  DiRmsNormT<T, int64_t>(x, n, y, gamma_m);
}

}  // namespace dv
