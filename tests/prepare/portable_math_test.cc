// prepare/portable_math.h against the C library's long double functions (x86-64: 64-bit
// significands; aarch64 and s390x under qemu: IEEE quad), which resolve a double's rounding to
// 1/2048 ulp or better. The stated accuracies are the bounds checked here; the measured maxima
// are printed.
#include "prepare/portable_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "engine/prng.h"

namespace dv {
namespace {

// How many ulps of the double result `got` lies from the exact value `want`.
double UlpError(double got, long double want) {
  const double w = static_cast<double>(want);
  if (w == 0.0) return got == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  const long double ulp = pmath::Ulp(w);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
}

// Uniform double in [lo, hi) from an integer stream.
double Uniform(SplitMix64& rng, double lo, double hi) {
  const double u = static_cast<double>(rng.Next() >> 11) * 0x1p-53;
  return lo + (hi - lo) * u;
}

// A correctly rounded result lies within half an ulp; the reference's own error adds at most
// 2^-11 ulp (x86 long double; IEEE quad elsewhere is far finer).
constexpr double kCorrectlyRounded = 0.5 + 0x1p-10;
// Exp: 1 + r + r^2/2 + r^3/6 in double-double, the rest small: correctly rounded except within
// about 2^-61 of a tie (measured: 0.5008 ulp against mpmath at the worst sample). A subnormal
// result is rounded a second time when scaled (not sampled here).
constexpr double kExpUlps = 0.5 + 0x1p-8;

TEST(PortableMath, ExpWithinHalfAnUlp) {
  SplitMix64 rng = TensorStream(1, "exp");
  double worst = 0, at = 0;
  for (int i = 0; i < 200000; ++i) {
    // Results above 2^-1022 (subnormal ones are rounded a second time when scaled).
    const double x = i < 100000 ? Uniform(rng, -708.0, 709.7) : Uniform(rng, -40.0, 40.0);
    const double e = UlpError(pmath::Exp(x), std::exp(static_cast<long double>(x)));
    if (e > worst) worst = e, at = x;
  }
  EXPECT_LE(worst, kExpUlps) << "at x = " << at;
  std::printf("[ measured ] Exp: max %.5f ulp (x = %.17g)\n", worst, at);
  EXPECT_EQ(pmath::Exp(0.0), 1.0);
  EXPECT_EQ(pmath::Exp(-800.0), 0.0);
  EXPECT_EQ(pmath::Exp(710.0), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(pmath::Exp(std::numeric_limits<double>::quiet_NaN())));
}

TEST(PortableMath, CosSinCorrectlyRounded) {
  SplitMix64 rng = TensorStream(2, "cossin");
  double worst = 0, at = 0;
  for (int i = 0; i < 100000; ++i) {
    // RoPE angles: pos * theta^(-2j/d) with pos < 2^17.
    const double x = i % 3 == 0 ? Uniform(rng, 0, 1.0) : Uniform(rng, -131072.0, 131072.0);
    double c = 0, s = 0;
    pmath::CosSin(x, c, s);
    const long double lx = x;
    for (const double e : {UlpError(c, std::cos(lx)), UlpError(s, std::sin(lx))}) {
      if (e > worst) worst = e, at = x;
    }
  }
  EXPECT_LE(worst, kCorrectlyRounded) << "at x = " << at;
  std::printf("[ measured ] CosSin: max %.5f ulp (x = %.17g)\n", worst, at);
  double c = 0, s = 0;
  pmath::CosSin(0.0, c, s);
  EXPECT_EQ(c, 1.0);
  EXPECT_EQ(s, 0.0);
}

TEST(PortableMath, PowCorrectlyRounded) {
  SplitMix64 rng = TensorStream(3, "pow");
  double worst = 0, at_x = 0, at_y = 0;
  for (int i = 0; i < 100000; ++i) {
    // The recipe's uses: theta^(-2j/d) with theta up to 1e7, maxima^alpha for maxima in
    // [1e-6, 1e4] and alpha in [0, 1].
    const bool rope = i % 2 == 0;
    const double x = rope ? Uniform(rng, 1e3, 1e7) : std::exp2(Uniform(rng, -20.0, 14.0));
    const double y = rope ? -Uniform(rng, 0.0, 2.0) : Uniform(rng, 0.0, 1.0);
    const double e = UlpError(pmath::Pow(x, y),
                              std::pow(static_cast<long double>(x), static_cast<long double>(y)));
    if (e > worst) worst = e, at_x = x, at_y = y;
  }
  EXPECT_LE(worst, kCorrectlyRounded) << "at " << at_x << "^" << at_y;
  std::printf("[ measured ] Pow: max %.5f ulp (%.17g ^ %.17g)\n", worst, at_x, at_y);
  // The exponents torch's pow(tensor, scalar) evaluates without pow.
  EXPECT_EQ(pmath::PowTensorScalar(2.0, 0.5), std::sqrt(2.0));
  EXPECT_EQ(pmath::PowTensorScalar(3.0, 2.0), 9.0);
  EXPECT_EQ(pmath::PowTensorScalar(5e5, -0.5), 1.0 / std::sqrt(5e5));
  EXPECT_EQ(pmath::PowTensorScalar(7.0, -1.0), 1.0 / 7.0);
  EXPECT_EQ(pmath::PowTensorScalar(7.0, 0.3), pmath::Pow(7.0, 0.3));
  // Pow itself has no special exponents (torch's pow(scalar, tensor) of the RoPE frequencies):
  // 5e5^-0.5 correctly rounded, not the twice-rounded 1 / sqrt(5e5).
  EXPECT_LE(UlpError(pmath::Pow(5e5, -0.5), std::pow(5e5L, -0.5L)), kCorrectlyRounded);
  EXPECT_EQ(pmath::Pow(5.0, 1.0), 5.0);
  EXPECT_EQ(pmath::Pow(5.0, 0.0), 1.0);
}

TEST(PortableMath, RoundHalfEvenIsNearbyInt) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  for (double x : {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, 4503599627370495.5,
                   4503599627370497.0, -4503599627370495.5, 1e300, -0.0, 0.0, 123.5, -123.5}) {
    EXPECT_EQ(std::bit_cast<uint64_t>(pmath::RoundHalfEven(x)),
              std::bit_cast<uint64_t>(std::nearbyint(x)))
        << x;
  }
  SplitMix64 rng = TensorStream(4, "round");
  for (int i = 0; i < 100000; ++i) {
    const double x = Uniform(rng, -1e6, 1e6);
    const double h = std::floor(x) + 0.5;  // exact ties too
    for (double v : {x, h}) EXPECT_EQ(pmath::RoundHalfEven(v), std::nearbyint(v)) << v;
  }
}

TEST(PortableMath, FloorLog2IsTheFloorOfTheRoundedLog2) {
  // Away from powers of two: the exponent.
  SplitMix64 rng = TensorStream(5, "log2");
  for (int i = 0; i < 100000; ++i) {
    const double x = std::exp2(Uniform(rng, -1070.0, 1020.0));
    if (x == 0.0) continue;
    const int64_t want = static_cast<int64_t>(
        std::floor(static_cast<double>(std::log2(static_cast<long double>(x)))));
    EXPECT_EQ(pmath::FloorLog2(x), want) << x;
  }
  // Just below a power of two the rounded log2 can be the power itself (what Python's
  // math.log2 and torch.log2 return, and DetLLM floors): nextafter(8, 0) has log2 3 - 1.6e-16,
  // which rounds to 3 (doubles below 3 lie 4.4e-16 apart); nextafter(4, 0)'s 2 - 1.6e-16 rounds
  // to 2 - 2.2e-16.
  for (int e = -1020; e <= 1020; ++e) {
    const double p = std::ldexp(1.0, e);
    for (double x : {p, std::nextafter(p, 0.0), std::nextafter(p, 1e308),
                     std::nextafter(std::nextafter(p, 0.0), 0.0)}) {
      const int64_t want = static_cast<int64_t>(
          std::floor(static_cast<double>(std::log2(static_cast<long double>(x)))));
      EXPECT_EQ(pmath::FloorLog2(x), want) << x;
    }
  }
  EXPECT_EQ(pmath::FloorLog2(std::nextafter(8.0, 0.0)), 3);
  EXPECT_EQ(pmath::FloorLog2(std::nextafter(4.0, 0.0)), 1);
  EXPECT_EQ(pmath::FloorLog2(std::nextafter(1.0, 0.0)), -1);
  EXPECT_EQ(pmath::FloorLog2(std::numeric_limits<double>::denorm_min()), -1074);
}

TEST(PortableMath, ScaleByPowerOf2AndUlp) {
  EXPECT_EQ(pmath::ScaleByPowerOf2(1.0, 10), 1024.0);
  EXPECT_EQ(pmath::ScaleByPowerOf2(3.0, -1074), std::ldexp(3.0, -1074));
  EXPECT_EQ(pmath::ScaleByPowerOf2(1.5, -1074), std::ldexp(1.5, -1074));  // rounds once
  EXPECT_EQ(pmath::ScaleByPowerOf2(1.0, 1024), std::numeric_limits<double>::infinity());
  EXPECT_EQ(pmath::ScaleByPowerOf2(0x1p-1000, 1500), 0x1p500);
  EXPECT_EQ(pmath::Ulp(1.0), 0x1p-52);
  EXPECT_EQ(pmath::Ulp(-3.0), 0x1p-51);
  EXPECT_EQ(pmath::Ulp(std::numeric_limits<double>::denorm_min()), 0x1p-1074);
  EXPECT_EQ(pmath::Floor(-0.5), -1.0);
  EXPECT_EQ(pmath::Floor(2.0), 2.0);
  EXPECT_EQ(pmath::Sqrt(2.0), std::sqrt(2.0));
}

}  // namespace
}  // namespace dv
