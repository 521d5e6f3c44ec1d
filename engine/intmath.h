// Canonical integer primitives of the detllm-v1 semantics (docs/SPEC.md §2).
//
// Every function reproduces the int64 behaviour of DetLLM's torch reference bit for bit,
// including its edges: add/sub/mul wrap modulo 2^64, shifts by >= 64 give 0 (left) or the
// sign fill (right), ilog2 of values <= 0 is 0. Nothing here uses floating point; all of it is
// usable from host and CUDA device code.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DV_HOST_DEVICE __host__ __device__
#else
#define DV_HOST_DEVICE
#endif

#define DV_INLINE DV_HOST_DEVICE inline

namespace dv {

inline constexpr int64_t kInt64Min = INT64_MIN;
inline constexpr int64_t kInt64Max = INT64_MAX;

// a + b modulo 2^64 (two's complement wrap; never UB).
DV_INLINE constexpr int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
// a - b modulo 2^64.
DV_INLINE constexpr int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
// a * b modulo 2^64.
DV_INLINE constexpr int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
// -a modulo 2^64: WrapNeg(INT64_MIN) == INT64_MIN.
DV_INLINE constexpr int64_t WrapNeg(int64_t a) {
  return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
}
// |a|, with |INT64_MIN| == INT64_MIN as torch's abs gives.
DV_INLINE constexpr int64_t WrapAbs(int64_t a) { return a < 0 ? WrapNeg(a) : a; }

// True when a * b does not fit int64 (the product WrapMul returns then differs from the exact one).
DV_INLINE constexpr bool MulOverflows(int64_t a, int64_t b) {
#if defined(__CUDA_ARCH__)
  // The device has no __builtin_mul_overflow: the product fits iff its high 64 bits are the
  // sign fill of its low 64.
  const int64_t lo = WrapMul(a, b);
  return __mul64hi(a, b) != (lo < 0 ? -1 : 0);
#else
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r);
#endif
}

// torch.bitwise_left_shift on int64: the two's-complement bits shifted left, wrapping;
// a count >= 64 (or < 0) gives 0.
DV_INLINE constexpr int64_t ShiftLeftWrap(int64_t a, int64_t count) {
  if (count < 0 || count >= 64) return 0;
  return static_cast<int64_t>(static_cast<uint64_t>(a) << count);
}

// torch.bitwise_right_shift on int64: arithmetic (floor) shift; a count >= 64 (or < 0)
// gives the sign fill (0 or -1).
DV_INLINE constexpr int64_t ShiftRightArith(int64_t a, int64_t count) {
  if (count < 0 || count >= 64) return a < 0 ? -1 : 0;
  return a >> count;  // C++20: arithmetic shift of signed values.
}

// n / d and n % d (in *rem) for d != 0 by shift and subtract, one step per quotient bit, in
// integer instructions only. The device uses it instead of its own integer division, which
// nvcc lowers to a float reciprocal estimate corrected in integers (SASS I2F, MUFU.RCP, F2I):
// exact, but float units would touch the data, which the float-leak guard forbids.
DV_INLINE constexpr uint64_t DivideBySteps(uint64_t n, uint64_t d, uint64_t* rem) {
  uint64_t q = 0;
  if (n >= d) {
    const int shift = __builtin_clzll(d) - __builtin_clzll(n);  // n >= d > 0
    uint64_t ds = d << shift;
    for (int i = 0; i <= shift; ++i) {
      q <<= 1;
      if (n >= ds) {
        n -= ds;
        q |= 1;
      }
      ds >>= 1;
    }
  }
  *rem = n;
  return q;
}

// C++'s truncating a / b and a % b through DivideBySteps (b != 0, not INT64_MIN / -1).
DV_INLINE constexpr int64_t TruncDivBySteps(int64_t a, int64_t b, int64_t* rem) {
  const uint64_t ua = a < 0 ? uint64_t{0} - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  const uint64_t ub = b < 0 ? uint64_t{0} - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  uint64_t ur = 0;
  const uint64_t uq = DivideBySteps(ua, ub, &ur);
  *rem = static_cast<int64_t>(a < 0 ? uint64_t{0} - ur : ur);
  return static_cast<int64_t>((a < 0) != (b < 0) ? uint64_t{0} - uq : uq);
}

// Floor division (Python / torch rounding_mode="floor"): rounds toward -infinity for any sign
// of b. INT64_MIN / -1 wraps to INT64_MIN. b == 0 is an invariant violation (returns 0; torch
// raises, so no valid run reaches it).
DV_INLINE constexpr int64_t FloorDiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return WrapNeg(a);
#if defined(__CUDA_ARCH__)
  int64_t r = 0;
  int64_t q = TruncDivBySteps(a, b, &r);
#else
  int64_t q = a / b;
  const int64_t r = a % b;
#endif
  if ((r != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Round-to-nearest division, ties away from zero, evaluated exactly as DetLLM's tensor form:
// sign(a) * floor((|a| + floor(b/2)) / b), with wrapping add/abs/multiply. The formula is used
// for every b != 0, including the b <= 0 that wrapped scales produce (SPEC §2).
DV_INLINE constexpr int64_t RoundHalfAwayDiv(int64_t a, int64_t b) {
  const int64_t sign = a < 0 ? -1 : 1;
  const int64_t mag = WrapAbs(a);
  return WrapMul(sign, FloorDiv(WrapAdd(mag, FloorDiv(b, 2)), b));
}

// rshift_round: (a + 2^(k-1)) >> k with a wrapping add and an arithmetic shift, i.e. round to
// nearest with ties toward +infinity. k == 0 returns a. k >= 64 follows the torch shift edges.
DV_INLINE constexpr int64_t RoundingShiftRight(int64_t a, int64_t k) {
  if (k == 0) return a;
  return ShiftRightArith(WrapAdd(a, ShiftLeftWrap(1, k - 1)), k);
}

// Saturating cast to int8: clamp to [-128, 127].
DV_INLINE constexpr int8_t SaturateToInt8(int64_t a) {
  return static_cast<int8_t>(a < -128 ? -128 : (a > 127 ? 127 : a));
}

// floor(log2(a)) for a >= 1 (index of the most significant bit); 0 for a <= 0, as DetLLM's
// shift-and-compare loop gives.
DV_INLINE constexpr int64_t Ilog2Floor(int64_t a) {
  if (a <= 0) return 0;
  return 63 - __builtin_clzll(static_cast<unsigned long long>(a));
}

// floor(sqrt(a)) for a >= 0, exact over the whole int64 range; 0 for a < 0 (DetLLM's tensor
// loop never subtracts from a negative remainder). Digit-by-digit method from the largest power
// of 4 not above a, one step per two bits; each step's compare selects by mask, not by a
// data-dependent branch (a norm takes one root per row and per Q/K head; its effect was measured
// only together with the bench's batched picks, docs/RESULTS.md "Third pass").
DV_INLINE constexpr int64_t Isqrt(int64_t a) {
  if (a <= 0) return 0;
  uint64_t rem = static_cast<uint64_t>(a);
  uint64_t root = 0;
  uint64_t bit = uint64_t{1} << ((63 - __builtin_clzll(rem)) & ~1);
  while (bit != 0) {
    const uint64_t trial = root + bit;
    const uint64_t take = uint64_t{0} - static_cast<uint64_t>(rem >= trial);  // all ones or 0
    rem -= trial & take;
    root = (root >> 1) + (bit & take);
    bit >>= 2;
  }
  return static_cast<int64_t>(root);
}

DV_INLINE constexpr int64_t Max(int64_t a, int64_t b) { return a > b ? a : b; }
DV_INLINE constexpr int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }

}  // namespace dv
