// The half-precision conversions every float path relies on, against independent definitions:
// F16 -> float for all 65536 patterns by ldexp arithmetic, float -> F16 rounding against the
// nearer neighbour (and the compiler's _Float16 where it has one), float -> BF16 rounding against a
// double-precision nearest-even computation, and the synthetic writer's integer BF16 against
// both.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "checkpoint/half_float.h"
#include "checkpoint/hf_synth.h"

namespace dv {
namespace {

double F16Reference(uint16_t h) {
  const double sign = (h >> 15) ? -1.0 : 1.0;
  const int e = (h >> 10) & 31;
  const int m = h & 1023;
  if (e == 31) return m ? std::nan("") : sign * HUGE_VAL;
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

TEST(HalfFloat, F16EveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = F16BitsToFloat(static_cast<uint16_t>(h));
    const double want = F16Reference(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), want) << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
    }
  }
}

TEST(HalfFloat, Bf16WideningIsExactAndRoundingIsNearestEven) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = Bf16BitsToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(FloatToBf16Bits(f), b) << "round trip " << b;
    }
  }
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200000; ++i) {
    const auto bits = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isfinite(f)) continue;
    const float r = RoundToBf16(f);
    // The two bf16 neighbours of f; r must be the nearer, ties to the even mantissa.
    const float lo = Bf16BitsToFloat(static_cast<uint16_t>((bits >> 16)));
    const float hi = Bf16BitsToFloat(static_cast<uint16_t>((bits >> 16) + 1));
    // Past the largest finite bf16 the upper neighbour is infinity, at the distance of 2^128.
    const double hi_value = std::isinf(hi) ? std::copysign(std::ldexp(1.0, 128), hi) : hi;
    const double dl = std::fabs(static_cast<double>(f) - lo);
    const double dh = std::fabs(static_cast<double>(f) - hi_value);
    const float want = dl < dh ? lo : dh < dl ? hi : (((bits >> 16) & 1) ? hi : lo);
    if (std::isinf(want) && std::isinf(r)) continue;
    ASSERT_EQ(r, want) << f;
  }
  EXPECT_TRUE(std::isnan(RoundToBf16(NAN)));
  EXPECT_EQ(RoundToBf16(3.4e38f), INFINITY);  // beyond bf16's largest finite value
}

// Float -> F16 against two references: the nearer of the value's two F16 neighbours (ties to the
// even one), found by a search over the 65536 patterns checked above, in double precision; and,
// where the compiler has _Float16, its own conversion.
double F16Nearest(double x) {
  // Finite positive F16 values in order: patterns 0 .. 0x7bff; beyond, infinity at 2^16.
  const double m = std::fabs(x);
  int lo = 0, hi = 0x7bff;
  if (m >= F16Reference(0x7bff)) {
    lo = 0x7bff;
  } else {
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      (F16Reference(static_cast<uint16_t>(mid)) <= m ? lo : hi) = mid;
    }
  }
  const double a = F16Reference(static_cast<uint16_t>(lo));
  const double b = lo == 0x7bff ? 65536.0 : F16Reference(static_cast<uint16_t>(lo + 1));
  const double da = m - a, db = b - m;
  double r = da < db ? a : db < da ? b : ((lo & 1) ? b : a);
  if (r == 65536.0) r = HUGE_VAL;
  return std::copysign(r, x);
}

TEST(HalfFloat, F16RoundingIsNearestEven) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = F16BitsToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(RoundToF16(f))) << h;
    } else {
      ASSERT_EQ(FloatToF16Bits(f), h) << "round trip " << h;
    }
  }
  std::vector<float> values;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    // Uniform over F16's range and around it (2^-30 .. 2^18), every sign and mantissa.
    const auto exponent = static_cast<uint32_t>(97 + rng() % 48);
    values.push_back(
        std::bit_cast<float>(static_cast<uint32_t>((rng() & 0x807fffffu) | (exponent << 23))));
  }
  // The edges: ties at every exponent, the overflow threshold, the subnormal steps, zero.
  for (double t : {65504.0, 65519.99, 65520.0, 65536.0, 1e6, 0x1p-14, 0x1p-24, 0x1p-25,
                   0x1.0000001p-25, 0x1p-26, 0.0, 1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 2047.0 + 0.5,
                   0x1.ffcp-15, 0x1.ffep-15, 3.4e38}) {
    values.push_back(static_cast<float>(t));
    values.push_back(static_cast<float>(-t));
  }
  for (const float f : values) {
    const double want = F16Nearest(f);
    const float r = RoundToF16(f);
    ASSERT_EQ(static_cast<double>(r), want) << f;
    ASSERT_EQ(std::signbit(r), std::signbit(f)) << f;
// GCC 12 has _Float16 in C++ on x86-64 only (aarch64 and s390x: in C alone).
#if defined(__FLT16_MAX__) && (defined(__x86_64__) || defined(__clang__))
    ASSERT_EQ(FloatToF16Bits(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
#endif
  }
  EXPECT_TRUE(std::isnan(RoundToF16(NAN)));
  EXPECT_EQ(RoundToF16(-INFINITY), -INFINITY);
}

TEST(HalfFloat, IntegerBf16MatchesFloatRounding) {
  std::mt19937_64 rng(9);
  for (int i = 0; i < 200000; ++i) {
    // |v| < 2^24: exact in float, so float rounding is the reference.
    const int64_t v = static_cast<int64_t>(rng() % (int64_t{1} << 25)) - (int64_t{1} << 24);
    const int shift = static_cast<int>(rng() % 40);
    if (v == 0) continue;
    const float exact = std::ldexp(static_cast<float>(v), -shift);
    ASSERT_EQ(Bf16FromScaledInt(v, shift), FloatToBf16Bits(exact)) << v << " " << shift;
  }
  EXPECT_EQ(Bf16FromScaledInt(0, 7), 0);
  EXPECT_EQ(Bf16FromScaledInt(255 * 2 + 1, 0), FloatToBf16Bits(511.0f));  // a tie, to even
  EXPECT_EQ(Bf16FromScaledInt(-(int64_t{1} << 40), 40), FloatToBf16Bits(-1.0f));
  // The synthetic writer's own values never leave the normal range: outside it is a bug.
  EXPECT_DEATH(Bf16FromScaledInt(1, 200), "check failed: .*outside the normal bfloat16 range");
}

}  // namespace
}  // namespace dv
