// engine/dyadic.h: scale fitting, quantization, requantization and the residual stream
// (COMPAT.md §3), against exact __int128 references, DetLLM's own test cases
// (tests/test_dyadic.py) and derived error bounds.
//
// Wrapped-int64 expectations come from a Python emulation of DetLLM's formulas with torch's
// int64 semantics (run with python3; the primitives are those of test_intmath.cc's header):
//   w = lambda x: ((x + 2**63) % 2**64) - 2**63
//   shl = lambda a, k: 0 if k >= 64 else w(a << k)
//   rhad = lambda a, b: w((-1 if a < 0 else 1) * w(w(w(abs(a)) + b // 2) // b))
//   rsr = lambda a, k: a if k == 0 else w(a + shl(1, k - 1)) >> k
//   ilog2 = lambda a: a.bit_length() - 1 if a > 0 else 0
//   srd = lambda n, d, e: rhad(shl(n, max(e, 0)), shl(d, max(-e, 0)))
//   def fit(n, d):
//     e = 15 - (ilog2(n) - ilog2(d)); m = srd(n, d, e)
//     adj = (-1 if m >= 2**16 else 0) + (1 if m < 2**15 else 0)
//     if adj: e += adj; m = srd(n, d, e)
//     if m >= 2**16: m = rsr(m, 1); e -= 1
//     return m, e
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/dyadic.h"
#include "tests/core/exact_reference.h"
#include "tests/core/suite_name.h"

namespace dv {
namespace {

using test::Int128;
using test::ToString;

constexpr int64_t kMin = INT64_MIN;

// Worst-case relative error of FitDyadicRatio for num, den >= 1, relative to num/den. The fit is
// the nearest m (|m - v| <= 1/2) to v = num * 2^e / den with m >= 2^15; the worst case is
// v = 2^15 - 1/2 rounded up to 2^15: (1/2) / (2^15 - 1/2) = 1 / (2^16 - 1). DetLLM's docstring
// states 2^-16; the exact worst case is a hair above (num = 196605, den = 12 reaches it, see
// FitDyadicRatio.WorstCaseReachesOneOver2To16Minus1).
constexpr double kMaxFitRelError = 1.0 / 65535.0;

// Quantization error in units of the int8 step a/127 (a = max|x|): the int8 rounding is at most
// half a step and the fitted scale has relative error <= kMaxFitRelError, applied to |x8| <= 127
// steps: 0.5 + 127 / 65535 = 0.50194. DetLLM freezes 0.51 in test_dyadic.py.
constexpr double kQuantMaxErrorSteps = 0.5 + 127.0 * kMaxFitRelError;
// When the input mantissa is outside [2^15, 2^16), NormScale rounds it first: a further relative
// error below 2^-16 on every |x8| <= 127 steps.
constexpr double kQuantMaxErrorStepsRenormed = kQuantMaxErrorSteps + 127.0 / 65536.0;

// |m * den - num * 2^e| scaled to compare against num * 2^e without overflow: returns
// {|difference|, reference}, both multiplied by 2^max(-e, 0).
struct FitResidual {
  Int128 diff;
  Int128 ref;
};
FitResidual FitResidualOf(int64_t num, int64_t den, Dyadic f) {
  Int128 lhs = Int128{f.m} * den;
  Int128 rhs = num;
  if (f.k >= 0) {
    rhs <<= f.k;
  } else {
    lhs <<= -f.k;
  }
  const Int128 d = lhs - rhs;
  return {d < 0 ? -d : d, rhs};
}

// ---------------------------------------------------------------------------------------------
// FitDyadicRatio.

TEST(DV_CORE_SUITE(FitDyadicRatio), DetllmExactPowers) {
  // DetLLM TestFitDyadicRatio.test_exact_powers: powers of two are represented exactly.
  struct Case {
    int64_t num, m, e;
  };
  for (const Case& c : {Case{1, 32768, 15}, Case{2, 32768, 14}, Case{1 << 15, 32768, 0},
                        Case{int64_t{1} << 30, 32768, -15}}) {
    const Dyadic f = FitDyadicRatio(c.num, 1);
    EXPECT_EQ(f.m, c.m) << "num " << c.num;
    EXPECT_EQ(f.k, c.e) << "num " << c.num;
  }
}

TEST(DV_CORE_SUITE(FitDyadicRatio), DetllmScalarDen127) {
  // DetLLM test_scalar_den: num / 127 for 127, 254, 1000000. 1000000/127 = 7874.0157: the first
  // e = 2 gives m = 31496 < 2^15, so e = 3 and m = round(8e6 / 127) = 62992.
  EXPECT_EQ(FitDyadicRatio(127, 127).m, 32768);
  EXPECT_EQ(FitDyadicRatio(127, 127).k, 15);
  EXPECT_EQ(FitDyadicRatio(254, 127).m, 32768);
  EXPECT_EQ(FitDyadicRatio(254, 127).k, 14);
  EXPECT_EQ(FitDyadicRatio(1000000, 127).m, 62992);
  EXPECT_EQ(FitDyadicRatio(1000000, 127).k, 3);
}

// 196605 / 12 = 16383.75; e = 15 - (17 - 3) = 1 gives v = 32767.5, rounded away to 32768:
// relative error 0.25 / 16383.75 = 1 / 65535.
TEST(DV_CORE_SUITE(FitDyadicRatio), WorstCaseReachesOneOver2To16Minus1) {
  const Dyadic f = FitDyadicRatio(196605, 12);
  EXPECT_EQ(f.m, 32768);
  EXPECT_EQ(f.k, 1);
  const FitResidual r = FitResidualOf(196605, 12, f);
  EXPECT_EQ(ToString(r.diff * 65535), ToString(r.ref));  // exactly at the bound
}

// DetLLM test_relative_error_bound (num < 2^40, den < 2^20) and wider ranges; exact integer
// checks: m in [2^15, 2^16), m is the nearest integer to num * 2^e / den, and the relative error
// is within kMaxFitRelError.
TEST(DV_CORE_SUITE(FitDyadicRatio), RangeNearestAndRelativeError) {
  test::SplitMix64 rng(11);
  int failures = 0;
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    int64_t num = 0;
    int64_t den = 0;
    if (i % 2 == 0) {
      num = rng.Uniform(1, (int64_t{1} << 40) - 1);
      den = rng.Uniform(1, (int64_t{1} << 20) - 1);
    } else {
      // Any magnitudes that keep num << e and den << -e inside int64: den < 2^46.
      num = rng.Uniform(1, INT64_MAX) >> (rng.Next() % 63);
      den = rng.Uniform(1, (int64_t{1} << 46) - 1) >> (rng.Next() % 46);
      if (num < 1) num = 1;
      if (den < 1) den = 1;
    }
    const Dyadic f = FitDyadicRatio(num, den);
    const FitResidual r = FitResidualOf(num, den, f);
    // nearest: |m - v| <= 1/2, i.e. 2 |m*den - num*2^e| <= den (times 2^max(-e,0)).
    const Int128 den_scaled = f.k >= 0 ? Int128{den} : Int128{den} << -f.k;
    const bool in_range = f.m >= (1 << 15) && f.m < (1 << 16);
    const bool nearest = 2 * r.diff <= den_scaled;
    const bool within = r.diff * 65535 <= r.ref;
    worst = std::max(worst, static_cast<double>(r.diff) / static_cast<double>(r.ref));
    if ((!in_range || !nearest || !within) && failures++ < 5) {
      ADD_FAILURE() << "FitDyadicRatio(" << num << ", " << den << ") = (" << f.m << ", " << f.k
                    << "): in_range " << in_range << " nearest " << nearest << " within " << within
                    << " (|diff| " << ToString(r.diff) << ", ref " << ToString(r.ref) << ")";
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_LE(worst, kMaxFitRelError);
}

// Non-positive (wrapped) numerators follow the same formulas (COMPAT §8); values from fit() in
// the file header: fit(-2**63, 127) = (0, 22), fit(-5, 127) = (-165130, 22), fit(0, 127) =
// (0, 22), fit(w((2**48 + 12345) * 2**15), 127) = (1669964449421, 19).
TEST(DV_CORE_SUITE(FitDyadicRatio), WrappedInputsFollowTheFormula) {
  struct Case {
    int64_t num, m, e;
  };
  const int64_t wrapped = WrapMul((int64_t{1} << 48) + 12345, int64_t{1} << 15);
  for (const Case& c : {Case{kMin, 0, 22}, Case{-5, -165130, 22}, Case{0, 0, 22},
                        Case{wrapped, 1669964449421LL, 19}}) {
    const Dyadic f = FitDyadicRatio(c.num, 127);
    EXPECT_EQ(f.m, c.m) << "num " << c.num;
    EXPECT_EQ(f.k, c.e) << "num " << c.num;
  }
}

// ---------------------------------------------------------------------------------------------
// NormScale.

TEST(DV_CORE_SUITE(NormScale), ExactValues) {
  struct Case {
    int64_t m, k, want_m, want_k;
  };
  // (65536, 0): sh = -1 -> 32768 exactly. (131071, 0): sh = -1 rounds to 65536 = 2^16, halved
  // again to 32768 with sh = -2. (0, 5) and (-3, 0): ilog2 of max(m, 1) = 0, sh = 15, m << 15.
  // (2^40 - 1, 7): rounds up to 2^16 at sh = -25, halved: (32768, 7 - 25).
  const Case cases[] = {{1, 0, 32768, 15},      {65535, 3, 65535, 3},
                        {32768, -4, 32768, -4}, {65536, 0, 32768, -1},
                        {131071, 0, 32768, -2}, {0, 5, 0, 20},
                        {-3, 0, -98304, 15},    {(int64_t{1} << 40) - 1, 7, 32768, -18},
                        {98305, 10, 49153, 9}};
  for (const Case& c : cases) {
    const Dyadic s = NormScale(c.m, c.k);
    EXPECT_EQ(s.m, c.want_m) << "m " << c.m << " k " << c.k;
    EXPECT_EQ(s.k, c.want_k) << "m " << c.m << " k " << c.k;
  }
}

// DetLLM TestNormScale.test_range_and_value: m in [1, 2^40), k in [0, 60). Growing is exact;
// shrinking rounds to nearest with relative error < 2^-16 (the shifted value is >= 2^15).
TEST(DV_CORE_SUITE(NormScale), RangeAndValue) {
  test::SplitMix64 rng(12);
  int failures = 0;
  for (int i = 0; i < 100000; ++i) {
    const int64_t m = rng.Uniform(1, (int64_t{1} << 40) - 1) >> (rng.Next() % 40);
    const int64_t k = rng.Uniform(0, 59);
    const Dyadic s = NormScale(m < 1 ? 1 : m, k);
    const int64_t m_in = m < 1 ? 1 : m;
    const int64_t sh = s.k - k;
    bool ok = s.m >= (1 << 15) && s.m < (1 << 16);
    if (sh >= 0) {
      ok = ok && Int128{s.m} == (Int128{m_in} << sh);
    } else {
      const Int128 diff = (Int128{s.m} << -sh) - m_in;
      ok = ok && (diff < 0 ? -diff : diff) * 65536 < m_in;
    }
    if (!ok && failures++ < 5) {
      ADD_FAILURE() << "NormScale(" << m_in << ", " << k << ") = (" << s.m << ", " << s.k << ")";
    }
  }
  EXPECT_EQ(failures, 0);
}

// ---------------------------------------------------------------------------------------------
// QuantI8PerToken.

// Value error of a quantized row in units of its step a*m/(127*2^k), checked per element.
template <typename T>
void ExpectQuantWithin(const std::vector<T>& x, int64_t m, int64_t k, double bound_steps,
                       const char* what) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<int8_t> x8(x.size());
  const Dyadic q = QuantI8PerToken(x.data(), n, m, k, x8.data());
  double a = 1;
  for (T v : x) a = std::max(a, std::fabs(static_cast<double>(v)));
  const double unit = std::ldexp(static_cast<double>(m), static_cast<int>(-k));
  const double step = a * unit / 127.0;
  const double out_scale = std::ldexp(static_cast<double>(q.m), static_cast<int>(-q.k));
  int failures = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = static_cast<double>(x[i]) * unit;
    const double got = static_cast<double>(x8[i]) * out_scale;
    const bool ok = std::fabs(got - want) <= bound_steps * step && x8[i] >= -127;
    if (!ok && failures++ < 5) {
      ADD_FAILURE() << what << ": index " << i << " x " << static_cast<double>(x[i]) << " x8 "
                    << static_cast<int>(x8[i]) << " expected " << want << " actual " << got
                    << " (error " << std::fabs(got - want) / step << " steps)";
    }
  }
}

TEST(DV_CORE_SUITE(QuantI8PerToken), DetllmMaxMapsTo127) {
  // DetLLM test_max_maps_to_127: [3, -1000, 500] at (1, 0). a = 1000: 381/1000 -> 0,
  // -127000/1000 = -127, 63500/1000 = 63.5 -> 64 (ties away from zero).
  const std::vector<int32_t> x = {3, -1000, 500};
  std::vector<int8_t> x8(3);
  const Dyadic q = QuantI8PerToken(x.data(), 3, 1, 0, x8.data());
  EXPECT_EQ(x8[0], 0);
  EXPECT_EQ(x8[1], -127);
  EXPECT_EQ(x8[2], 64);
  // NormScale(1, 0) = (32768, 15); fit(1000 * 32768, 127) = (64504, -2) (Python emulation).
  EXPECT_EQ(q.m, 64504);
  EXPECT_EQ(q.k, 15 - 2);
}

TEST(DV_CORE_SUITE(QuantI8PerToken), DetllmZeroRow) {
  // All-zero row: a is clamped to 1, x8 = 0; scale fit(1 * 32768, 127) = (33026, 7).
  const std::vector<int32_t> x(8, 0);
  std::vector<int8_t> x8(8, 99);
  const Dyadic q = QuantI8PerToken(x.data(), 8, 1, 0, x8.data());
  for (size_t i = 0; i < x8.size(); ++i) EXPECT_EQ(x8[i], 0) << "index " << i;
  EXPECT_EQ(q.m, 33026);
  EXPECT_EQ(q.k, 15 + 7);
}

// DetLLM test_roundtrip_accuracy: 64 rows of 1024 values in [-2^24, 2^24), m in [2^15, 2^16),
// k = 30.
TEST(DV_CORE_SUITE(QuantI8PerToken), RoundtripWithinHalfStep) {
  test::SplitMix64 rng(13);
  for (int row = 0; row < 64; ++row) {
    std::vector<int32_t> x(1024);
    for (auto& v : x) v = static_cast<int32_t>(rng.Uniform(-(1 << 24), (1 << 24) - 1));
    const int64_t m = rng.Uniform(1 << 15, (1 << 16) - 1);
    ExpectQuantWithin(x, m, 30, kQuantMaxErrorSteps, "int32 row");
  }
  for (int row = 0; row < 64; ++row) {
    std::vector<int64_t> x(128);
    const int bits = static_cast<int>(rng.Uniform(1, 40));
    for (auto& v : x) v = rng.Uniform(-(int64_t{1} << bits), int64_t{1} << bits);
    const int64_t m = rng.Uniform(1, (int64_t{1} << 30)) >> (rng.Next() % 30);
    ExpectQuantWithin(x, m < 1 ? 1 : m, rng.Uniform(0, 50), kQuantMaxErrorStepsRenormed,
                      "int64 row, any mantissa");
  }
}

TEST(DV_CORE_SUITE(QuantI8PerToken), AdversarialRows) {
  constexpr int64_t kN = 3072;
  std::vector<int8_t> x8(kN);
  // All equal: every element is the max -> +-127 exactly.
  for (int32_t c : {1, 12345, INT32_MAX, -1, -777, INT32_MIN}) {
    const std::vector<int32_t> x(kN, c);
    QuantI8PerToken(x.data(), kN, 1, 0, x8.data());
    for (int64_t i = 0; i < kN; ++i) {
      ASSERT_EQ(x8[static_cast<size_t>(i)], c > 0 ? 127 : -127) << "c " << c << " index " << i;
    }
  }
  // One huge outlier: the rest round to 0 (|127 * 1000 / 2^40| < 1/2).
  {
    std::vector<int64_t> x(kN, -1000);
    x[17] = int64_t{1} << 40;
    QuantI8PerToken(x.data(), kN, 1, 0, x8.data());
    for (int64_t i = 0; i < kN; ++i) {
      ASSERT_EQ(x8[static_cast<size_t>(i)], i == 17 ? 127 : 0) << "index " << i;
    }
  }
  // All negative, random: x8 in [-127, 0] and the minimum maps to -127.
  {
    test::SplitMix64 rng(14);
    std::vector<int32_t> x(kN);
    for (auto& v : x) v = static_cast<int32_t>(rng.Uniform(-(int64_t{1} << 31), -1));
    QuantI8PerToken(x.data(), kN, 40000, 20, x8.data());
    EXPECT_EQ(*std::min_element(x8.begin(), x8.end()), -127);
    EXPECT_LE(*std::max_element(x8.begin(), x8.end()), 0);
    ExpectQuantWithin(x, 40000, 20, kQuantMaxErrorSteps, "all negative");
  }
  // All zero at full length.
  {
    const std::vector<int32_t> x(kN, 0);
    QuantI8PerToken(x.data(), kN, 1, 0, x8.data());
    EXPECT_EQ(std::count(x8.begin(), x8.end(), 0), kN);
  }
}

// x8 stays in [-127, 127] for any input, INT64 extremes included.
TEST(DV_CORE_SUITE(QuantI8PerToken), Int8RangeIsSymmetric) {
  test::SplitMix64 rng(15);
  std::vector<int64_t> x(64);
  std::vector<int8_t> x8(64);
  for (int row = 0; row < 2000; ++row) {
    for (auto& v : x) v = rng.AnyMagnitude() >> 8;  // |x| * 127 stays inside int64
    QuantI8PerToken(x.data(), 64, 1, 0, x8.data());
    for (size_t i = 0; i < x8.size(); ++i) {
      ASSERT_GE(x8[i], -127) << "row " << row << " index " << i << " x " << x[i];
    }
  }
}

// COMPAT §8: with the mantissa renormalised to 2^15, a >= 2^48 makes a * m wrap. The scale is
// then the formula's result on the wrapped product (Python emulation, file header):
// a = 2^48 + 12345: fit(w(a * 2**15), 127) = (1669964449421, 19); a = 2^48: fit(-2**63, 127) =
// (0, 22). Just below, a = 2^48 - 1, the product 2^63 - 2^15 fits but the fit's rounding add
// |num| + floor(den / 2) (den = 127 << 41) wraps: fit(2**63 - 2**15, 127) = (-66052, -40), again
// the torch result. a = 2^47 wraps nowhere: (33026, -40). The WrapCounter counts product
// overflows (1 for the first two, 0 for 2^47); the third case's add wrap is not a product
// overflow, so its count is not checked here.
TEST(DV_CORE_SUITE(QuantI8PerToken), WrapsLikeTorchWhenScaleProductOverflows) {
  struct Case {
    int64_t a, m, k, product_wraps;  // product_wraps -1: not checked
  };
  const Case cases[] = {{(int64_t{1} << 48) + 12345, 1669964449421LL, 15 + 19, 1},
                        {int64_t{1} << 48, 0, 15 + 22, 1},
                        {(int64_t{1} << 48) - 1, -66052, 15 - 40, -1},
                        {int64_t{1} << 47, 33026, 15 - 40, 0}};
  for (const Case& c : cases) {
    for (const int64_t sign : {1, -1}) {
      const std::vector<int64_t> x = {-7, sign * c.a, 3};
      std::vector<int8_t> x8(3);
      WrapCounter wraps;
      const Dyadic q = QuantI8PerToken(x.data(), 3, 1, 0, x8.data(), &wraps);
      EXPECT_EQ(x8[0], 0) << "a " << c.a;
      EXPECT_EQ(x8[1], sign * 127) << "a " << c.a;
      EXPECT_EQ(x8[2], 0) << "a " << c.a;
      EXPECT_EQ(q.m, c.m) << "a " << c.a;
      EXPECT_EQ(q.k, c.k) << "a " << c.a;
      if (c.product_wraps >= 0) {
        EXPECT_EQ(wraps.events, c.product_wraps) << "a " << c.a;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// RequantI32Common: y = rshift_round(P * col_m, sh), sh = max(ilog2(max|P*col_m|) - (tb-1), 0).

TEST(DV_CORE_SUITE(RequantI32Common), TiesAndShift) {
  // a = 2^20 at target 16: sh = 5. -48/32 = -1.5 -> -1 and -16/32 = -0.5 -> 0 (ties toward
  // +inf); 48/32 = 1.5 -> 2, 16/32 -> 1.
  const std::vector<int32_t> p = {1 << 20, -48, 48, -16, 16, 0};
  const std::vector<int64_t> cm(p.size(), 1);
  std::vector<int32_t> y(p.size());
  EXPECT_EQ(RequantI32Common(p.data(), cm.data(), 6, 16, y.data()), 5);
  const std::vector<int32_t> want = {32768, -1, 2, 0, 1, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y[i], want[i]) << "index " << i;
}

TEST(DV_CORE_SUITE(RequantI32Common), SmallAndZeroRowsAreUnshifted) {
  const std::vector<int32_t> p = {-100, 7, 0, 255};
  const std::vector<int64_t> cm = {3, 40, 9, 64};  // max |P*cm| = 16320 < 2^15
  std::vector<int32_t> y(4);
  EXPECT_EQ(RequantI32Common(p.data(), cm.data(), 4, 16, y.data()), 0);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(y[i], p[i] * cm[i]) << "index " << i;
  const std::vector<int32_t> zeros(4, 0);
  EXPECT_EQ(RequantI32Common(zeros.data(), cm.data(), 4, 16, y.data()), 0);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(y[i], 0) << "index " << i;
}

// The rounding can reach exactly 2^tb: a = 2^21 - 1 at tb = 16, sh = 5 rounds to 2^16. The bound
// is |y| <= 2^tb (DetLLM's own test asserts < 2^tb on random data, where this is rare).
TEST(DV_CORE_SUITE(RequantI32Common), RoundingCanReachTwoToTargetBits) {
  const int32_t p = (1 << 21) - 1;
  const int64_t cm = 1;
  int32_t y = 0;
  EXPECT_EQ(RequantI32Common(&p, &cm, 1, 16, &y), 5);
  EXPECT_EQ(y, 1 << 16);
}

// DetLLM test_i32_common setup (P in [-2^24, 2^24), col_m in [2^15, 2^16)) at every target the
// model uses: the shift, each rounded value (exact, ties toward +inf) and |y| <= 2^tb.
TEST(DV_CORE_SUITE(RequantI32Common), RandomRowsExact) {
  test::SplitMix64 rng(16);
  int failures = 0;
  for (int64_t tb : {12, 14, 16, 20}) {
    for (int row = 0; row < 32; ++row) {
      const int64_t n = 512;
      std::vector<int32_t> p(512);
      std::vector<int64_t> cm(512);
      const int bits = static_cast<int>(rng.Uniform(1, 24));
      for (auto& v : p) v = static_cast<int32_t>(rng.Uniform(-(1 << bits), (1 << bits) - 1));
      for (auto& v : cm) v = rng.Uniform(1 << 15, (1 << 16) - 1);
      std::vector<int32_t> y(512);
      const int64_t sh = RequantI32Common(p.data(), cm.data(), n, tb, y.data());
      Int128 a = 1;
      for (int64_t i = 0; i < n; ++i) {
        const Int128 s = Int128{p[static_cast<size_t>(i)]} * cm[static_cast<size_t>(i)];
        a = std::max(a, s < 0 ? -s : s);
      }
      const int64_t want_sh = std::max<int64_t>(test::Msb(a) - (tb - 1), 0);
      if (sh != want_sh && failures++ < 5) {
        ADD_FAILURE() << "tb " << tb << " row " << row << " shift " << sh << " want " << want_sh;
      }
      for (int64_t i = 0; i < n; ++i) {
        const auto u = static_cast<size_t>(i);
        const Int128 s = Int128{p[u]} * cm[u];
        const Int128 want =
            want_sh == 0 ? s : test::RoundHalfUpPow2Exact(s, static_cast<int>(want_sh));
        const bool ok = Int128{y[u]} == want && y[u] <= (1 << tb) && y[u] >= -(1 << tb);
        if (!ok && failures++ < 5) {
          ADD_FAILURE() << "tb " << tb << " row " << row << " index " << i << " expected "
                        << ToString(want) << " actual " << y[u];
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// ---------------------------------------------------------------------------------------------
// RequantI8RowCol.

// Value check of a requantized row against P * row_m * col_m / 2^(row_k + col_k), per element,
// in units of the int8 step max|value| / 127.
void ExpectRowColWithin(const std::vector<int64_t>& p, const std::vector<int64_t>& cm, int64_t rm,
                        int64_t rk, int64_t ck, double bound_steps, const char* what) {
  const auto n = static_cast<int64_t>(p.size());
  std::vector<int64_t> scratch(p.size());
  std::vector<int8_t> y8(p.size());
  const Dyadic s = RequantI8RowCol(p.data(), cm.data(), n, rm, rk, ck, scratch.data(), y8.data());
  std::vector<double> want(p.size());
  double max_abs = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    want[i] =
        std::ldexp(static_cast<double>(p[i]) * static_cast<double>(cm[i]) * static_cast<double>(rm),
                   static_cast<int>(-(rk + ck)));
    max_abs = std::max(max_abs, std::fabs(want[i]));
  }
  const double step = max_abs / 127.0;
  const double scale = std::ldexp(static_cast<double>(s.m), static_cast<int>(-s.k));
  int failures = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double got = static_cast<double>(y8[i]) * scale;
    if ((std::fabs(got - want[i]) > bound_steps * step || y8[i] < -127) && failures++ < 5) {
      ADD_FAILURE() << what << ": index " << i << " expected " << want[i] << " actual " << got
                    << " (" << std::fabs(got - want[i]) / step << " steps)";
    }
  }
}

// DetLLM test_i8_rowcol: P in [-2^24, 2^24), row_m, col_m in [2^15, 2^16), row_k 28, col_k 24.
TEST(DV_CORE_SUITE(RequantI8RowCol), DetllmAccuracy) {
  test::SplitMix64 rng(17);
  for (int row = 0; row < 32; ++row) {
    std::vector<int64_t> p(512);
    std::vector<int64_t> cm(512);
    for (auto& v : p) v = rng.Uniform(-(1 << 24), (1 << 24) - 1);
    for (auto& v : cm) v = rng.Uniform(1 << 15, (1 << 16) - 1);
    ExpectRowColWithin(p, cm, rng.Uniform(1 << 15, (1 << 16) - 1), 28, 24, kQuantMaxErrorSteps,
                       "rowcol");
  }
}

// Large inputs take the pre-shift (max|P*col_m| >= 2^46): the rounded pre-shift moves each value
// by at most half a unit of the shifted row, whose max is >= 2^45, i.e. 127 / 2^46 < 2^-38 steps.
TEST(DV_CORE_SUITE(RequantI8RowCol), PreShiftPathAccuracy) {
  test::SplitMix64 rng(18);
  for (int row = 0; row < 64; ++row) {
    std::vector<int64_t> p(128);
    std::vector<int64_t> cm(128);
    const int bits = static_cast<int>(rng.Uniform(31, 46));  // |P * cm| up to 2^62
    for (auto& v : p) v = rng.Uniform(-(int64_t{1} << bits), int64_t{1} << bits);
    for (auto& v : cm) v = rng.Uniform(1 << 15, (1 << 16) - 1);
    ExpectRowColWithin(p, cm, 1, 7, 40, kQuantMaxErrorSteps + 0x1.0p-38, "pre-shifted rowcol");
  }
}

// The pre-shift changes bits, exactly as DetLLM's: for s = {2^46, 4709719098505}, sh = 1 and
// s' = {2^45, 2354859549253}; 127 * 2354859549253 / 2^45 = 8.5000000000002 -> 9, whereas
// rounding the unshifted value (127 * s / 2^46 = 8.49999999999993) would give 8. The scale is
// fit(2^45, 127) = (33026, -23) with k = -23 - 1 (Python emulation of requant_i8_rowcol).
TEST(DV_CORE_SUITE(RequantI8RowCol), PreShiftRoundingIsVisible) {
  const std::vector<int64_t> p = {int64_t{1} << 46, 4709719098505LL};
  const std::vector<int64_t> cm = {1, 1};
  std::vector<int64_t> scratch(2);
  std::vector<int8_t> y8(2);
  const Dyadic s = RequantI8RowCol(p.data(), cm.data(), 2, 1, 0, 0, scratch.data(), y8.data());
  EXPECT_EQ(y8[0], 127);
  EXPECT_EQ(y8[1], 9);
  EXPECT_EQ(s.m, 33026);
  EXPECT_EQ(s.k, -24);
  // Just below the guard (max = 2^46 - 1, ilog2 45): no pre-shift, fit(2^46 - 1, 127) =
  // (33026, -24).
  const std::vector<int64_t> p2 = {(int64_t{1} << 46) - 1};
  const Dyadic s2 = RequantI8RowCol(p2.data(), cm.data(), 1, 1, 0, 0, scratch.data(), y8.data());
  EXPECT_EQ(y8[0], 127);
  EXPECT_EQ(s2.m, 33026);
  EXPECT_EQ(s2.k, -24);
}

// a * row_m wraps when row_m is large: a = 2^45, row_m = 2^20 gives 2^65 = 0 mod 2^64, and
// fit(0, 127) = (0, 22).
TEST(DV_CORE_SUITE(RequantI8RowCol), ScaleProductWrapIsCounted) {
  const std::vector<int64_t> p = {int64_t{1} << 45, 3};
  const std::vector<int64_t> cm = {1, 1};
  std::vector<int64_t> scratch(2);
  std::vector<int8_t> y8(2);
  WrapCounter wraps;
  const Dyadic s = RequantI8RowCol(p.data(), cm.data(), 2, int64_t{1} << 20, 0, 0, scratch.data(),
                                   y8.data(), &wraps);
  EXPECT_EQ(wraps.events, 1);
  EXPECT_EQ(s.m, 0);
  EXPECT_EQ(s.k, 22);
  EXPECT_EQ(y8[0], 127);
  EXPECT_EQ(y8[1], 0);
}

TEST(DV_CORE_SUITE(RequantI8RowCol), AdversarialRows) {
  constexpr int64_t kN = 3072;
  std::vector<int64_t> scratch(kN);
  std::vector<int8_t> y8(kN);
  const std::vector<int64_t> cm(kN, 40000);
  for (int64_t c : {int64_t{0}, int64_t{5}, -int64_t{5}, int64_t{1} << 40, -(int64_t{1} << 40)}) {
    const std::vector<int64_t> p(kN, c);
    RequantI8RowCol(p.data(), cm.data(), kN, 1, 0, 0, scratch.data(), y8.data());
    const int want = c == 0 ? 0 : (c > 0 ? 127 : -127);
    for (int64_t i = 0; i < kN; ++i) {
      ASSERT_EQ(y8[static_cast<size_t>(i)], want) << "c " << c << " index " << i;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// RequantI8Static: one rounding of P*col_m*row_m * 2^(s_k - row_k - col_k) / s_m.

int8_t StaticReference(int64_t p, int64_t rm, int64_t rk, int64_t cm, int64_t ck, int64_t sm,
                       int64_t sk) {
  Int128 num = Int128{p} * cm * rm;
  Int128 den = sm;
  const int64_t shift = rk + ck - sk;
  if (shift >= 0) {
    den <<= shift;
  } else {
    num <<= -shift;
  }
  const Int128 r = test::RoundHalfAwayExact(num, den);
  return static_cast<int8_t>(r < -128 ? -128 : (r > 127 ? 127 : r));
}

TEST(DV_CORE_SUITE(RequantI8Static), SingleRounding) {
  // -39 / (3 * 2) = -6.5 -> -7 in one rounding; rounding the shift first would give
  // rshift_round(-39, 1) = -19, -19 / 3 -> -6.
  EXPECT_EQ(RequantI8Static(-39, 1, 1, 1, 0, 3, 0), -7);
  // -36 / (3 * 8) = -1.5 -> -2 (two roundings would give -1).
  EXPECT_EQ(RequantI8Static(-36, 1, 3, 1, 0, 3, 0), -2);
  EXPECT_EQ(RequantI8Static(39, 1, 1, 1, 0, 3, 0), 7);
}

TEST(DV_CORE_SUITE(RequantI8Static), NegativeShiftScalesTheNumerator) {
  // shift = 0 + 0 - 3: 5 * 8 / 16 = 2.5 -> 3; -2.5 -> -3.
  EXPECT_EQ(RequantI8Static(5, 1, 0, 1, 0, 16, 3), 3);
  EXPECT_EQ(RequantI8Static(-5, 1, 0, 1, 0, 16, 3), -3);
  EXPECT_EQ(RequantI8Static(-5, 3, 2, 7, 1, 11, 9), StaticReference(-5, 3, 2, 7, 1, 11, 9));
}

TEST(DV_CORE_SUITE(RequantI8Static), SaturatesAsymmetrically) {
  EXPECT_EQ(RequantI8Static(-1000, 1, 0, 1, 0, 1, 0), -128);  // static scales can reach -128
  EXPECT_EQ(RequantI8Static(1000, 1, 0, 1, 0, 1, 0), 127);
  EXPECT_EQ(RequantI8Static(-128, 1, 0, 1, 0, 1, 0), -128);
  EXPECT_EQ(RequantI8Static(-129, 1, 0, 1, 0, 1, 0), -128);
}

// DetLLM test_i8_static setup (P in [-2^24, 2^24), row_m, col_m in [2^15, 2^16), row_k 28,
// col_k 24, s_k 40) and random shifts of both signs, against the exact single rounding.
TEST(DV_CORE_SUITE(RequantI8Static), RandomAgainstExactRounding) {
  test::SplitMix64 rng(19);
  int failures = 0;
  for (int i = 0; i < 200000; ++i) {
    const int64_t p = rng.Uniform(-(1 << 24), (1 << 24) - 1);
    const int64_t rm = rng.Uniform(1 << 15, (1 << 16) - 1);
    const int64_t cm = rng.Uniform(1 << 15, (1 << 16) - 1);
    const int64_t rk = i % 2 == 0 ? 28 : rng.Uniform(0, 40);
    const int64_t ck = i % 2 == 0 ? 24 : rng.Uniform(0, 20);
    const int64_t sm = rng.Uniform(1 << 15, (1 << 16) - 1);
    // s_k around row_k + col_k - (bits of the product that land in int8): both shift signs.
    const int64_t sk = rk + ck - rng.Uniform(-3, 40);
    const int8_t got = RequantI8Static(p, rm, rk, cm, ck, sm, sk);
    const int8_t want = StaticReference(p, rm, rk, cm, ck, sm, sk);
    if (got != want && failures++ < 5) {
      ADD_FAILURE() << "P " << p << " rm " << rm << " rk " << rk << " cm " << cm << " ck " << ck
                    << " sm " << sm << " sk " << sk << ": expected " << static_cast<int>(want)
                    << " actual " << static_cast<int>(got);
    }
  }
  EXPECT_EQ(failures, 0);
}

// ---------------------------------------------------------------------------------------------
// Residual stream.

// Exact reference of residual_renorm on an int64 row (COMPAT §3), computed in __int128.
int64_t RenormReference(const std::vector<Int128>& v, int64_t k_res, std::vector<int32_t>* h) {
  Int128 g = 0;
  for (Int128 x : v) g = std::max(g, x < 0 ? -x : x);
  const int lg = g > 0 ? test::Msb(g) : 0;
  const int down = std::max(lg - 29, 0);
  const int up = (g > 0 && down == 0) ? std::max(26 - lg, 0) : 0;
  h->resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const Int128 r = down > 0 ? test::RoundHalfUpPow2Exact(v[i], down) : v[i];
    (*h)[i] = static_cast<int32_t>(r * (Int128{1} << up));
  }
  return k_res - down + up;
}

TEST(DV_CORE_SUITE(Residual), DetllmRenormBounds) {
  // DetLLM test_renorm_bounds rows at k_res 0.
  auto renorm = [](const std::vector<int64_t>& row, std::vector<int32_t>* h) {
    h->resize(row.size());
    return ResidualRenormWith([&](int64_t i) { return row[static_cast<size_t>(i)]; },
                              static_cast<int64_t>(row.size()), 0, h->data());
  };
  std::vector<int32_t> h;
  // max 5: up-shift to MSB 26 is 24 places.
  EXPECT_EQ(renorm({1, -3, 5}, &h), 24);
  EXPECT_EQ(h, (std::vector<int32_t>{1 << 24, -3 * (1 << 24), 5 * (1 << 24)}));
  EXPECT_EQ(renorm({0, 0, 0}, &h), 0);
  EXPECT_EQ(h, (std::vector<int32_t>{0, 0, 0}));
  // max 2^40: 11 places down; 5 and -9 round to 0.
  EXPECT_EQ(renorm({int64_t{1} << 40, 5, -9}, &h), -11);
  EXPECT_EQ(h, (std::vector<int32_t>{1 << 29, 0, 0}));
}

// A rounded down-shift can land exactly on 2^30: 2^31 - 1 has lg 30, one place down,
// (2^31 - 1 + 1) >> 1 = 2^30. The band after renorm is [2^26, 2^30], closed at the top (the
// negative side stays above -2^30: -(2^31 - 1) is -1073741823.5, rounded toward +inf).
TEST(DV_CORE_SUITE(Residual), DownShiftCanReachTwoTo30) {
  std::vector<int32_t> h(2);
  const std::vector<int64_t> row = {(int64_t{1} << 31) - 1, -((int64_t{1} << 31) - 1)};
  const int64_t k =
      ResidualRenormWith([&](int64_t i) { return row[static_cast<size_t>(i)]; }, 2, 10, h.data());
  EXPECT_EQ(k, 9);
  EXPECT_EQ(h[0], 1 << 30);
  EXPECT_EQ(h[1], -(1 << 30) + 1);
}

bool InBand(const std::vector<int32_t>& h) {
  int64_t g = 0;
  for (int32_t v : h) g = std::max<int64_t>(g, v < 0 ? -int64_t{v} : v);
  return g == 0 || (g >= (int64_t{1} << 26) && g <= (int64_t{1} << 30));
}

TEST(DV_CORE_SUITE(Residual), FromDeltaIsExactRenorm) {
  test::SplitMix64 rng(20);
  int failures = 0;
  for (int row = 0; row < 2000; ++row) {
    const int64_t n = 64;
    std::vector<int8_t> d(64);
    const int mode = row % 4;
    for (auto& v : d) {
      v = static_cast<int8_t>(mode == 0 ? 0 : rng.Uniform(mode == 1 ? -128 : -3, 127));
    }
    const int64_t dm = rng.Uniform(1, (int64_t{1} << 55)) >> (rng.Next() % 55);
    const int64_t dk = rng.Uniform(-20, 60);
    std::vector<int32_t> h(64);
    const int64_t k = ResidualFromDelta(d.data(), n, dm, dk, h.data());
    std::vector<Int128> v(64);
    for (size_t i = 0; i < v.size(); ++i) v[i] = Int128{d[i]} * dm;
    std::vector<int32_t> want;
    const int64_t want_k = RenormReference(v, dk, &want);
    if ((k != want_k || h != want || !InBand(h)) && failures++ < 5) {
      ADD_FAILURE() << "row " << row << " dm " << dm << " dk " << dk << ": k " << k << " want "
                    << want_k << ", h[0] " << h[0] << " want " << want[0] << ", in band "
                    << InBand(h);
    }
  }
  EXPECT_EQ(failures, 0);
}

// ResidualAdd against the exact formula: the delta is aligned to k_res (rounded when finer,
// shifted up when coarser), added, renormalised; h is updated in place.
TEST(DV_CORE_SUITE(Residual), AddAlignsDeltaBothDirectionsInPlace) {
  test::SplitMix64 rng(21);
  int failures = 0;
  for (int row = 0; row < 4000; ++row) {
    const int64_t n = 96;
    std::vector<int32_t> h(96);
    // A renormalised residual: max in [2^26, 2^30).
    const int hb = static_cast<int>(rng.Uniform(26, 29));
    for (auto& v : h) v = static_cast<int32_t>(rng.Uniform(-(int64_t{1} << hb), int64_t{1} << hb));
    const int64_t k_res = rng.Uniform(10, 50);
    std::vector<int32_t> d(96);
    const int db = static_cast<int>(rng.Uniform(0, 20));
    for (auto& v : d) v = static_cast<int32_t>(rng.Uniform(-(int64_t{1} << db), int64_t{1} << db));
    const int64_t dm = rng.Uniform(1 << 15, (1 << 16) - 1);
    const int64_t dk = k_res + rng.Uniform(-8, 30);  // finer (down) and coarser (up)
    const int64_t rel = dk - k_res;
    std::vector<Int128> v(96);
    for (size_t i = 0; i < v.size(); ++i) {
      const Int128 d64 = Int128{d[i]} * dm;
      const Int128 aligned = rel > 0 ? test::RoundHalfUpPow2Exact(d64, static_cast<int>(rel))
                                     : d64 * (Int128{1} << -rel);
      v[i] = Int128{h[i]} + aligned;
    }
    std::vector<int32_t> want;
    const int64_t want_k = RenormReference(v, k_res, &want);
    const int64_t k = ResidualAdd(h.data(), n, k_res, d.data(), dm, dk);
    if ((k != want_k || h != want || !InBand(h)) && failures++ < 5) {
      size_t first = 0;
      while (first + 1 < h.size() && h[first] == want[first]) ++first;
      ADD_FAILURE() << "row " << row << " k_res " << k_res << " dk " << dk << ": k " << k
                    << " want " << want_k << ", first mismatch index " << first << " expected "
                    << want[first] << " actual " << h[first];
    }
  }
  EXPECT_EQ(failures, 0);
}

// In place with a renorm in either direction: the second pass must use the pre-add h of every
// element. Cancellation to a small row shifts up; a sum past 2^30 shifts down.
TEST(DV_CORE_SUITE(Residual), AddInPlaceWithRenormBothWays) {
  {
    // h = [2^26, 5, -3] at k 30, d = -2^26 at the same scale: sum [0, 5, -3], up 24.
    std::vector<int32_t> h = {1 << 26, 5, -3};
    const std::vector<int32_t> d = {-(1 << 26), 0, 0};
    EXPECT_EQ(ResidualAdd(h.data(), 3, 30, d.data(), 1, 30), 54);
    EXPECT_EQ(h, (std::vector<int32_t>{0, 5 * (1 << 24), -3 * (1 << 24)}));
  }
  {
    // h = [2^29 + 2^28, -7, 6] at k 0, d * dm = [2^29, 0, 0]: max 2^30 + 2^28, lg 30, one place
    // down: [2^29 + 2^27, rshift_round(-7, 1) = -3, 3].
    std::vector<int32_t> h = {(1 << 29) + (1 << 28), -7, 6};
    const std::vector<int32_t> d = {1 << 14, 0, 0};
    EXPECT_EQ(ResidualAdd(h.data(), 3, 0, d.data(), 1 << 15, 0), -1);
    EXPECT_EQ(h, (std::vector<int32_t>{(1 << 29) + (1 << 27), -3, 3}));
  }
}

// DetLLM test_from_delta_and_add_accuracy: d1, d2 in [-2^20, 2^20), m1, m2 in [2^15, 2^16),
// k1 = 35, k2 = 42. Error sources: the finer delta rounds (<= 1/2 unit of 2^-k_res) and each
// renorm rounding (<= 1/2 unit of the new 2^-k_res); bounded per element below.
TEST(DV_CORE_SUITE(Residual), DetllmFromDeltaAndAddAccuracy) {
  test::SplitMix64 rng(22);
  int failures = 0;
  for (int row = 0; row < 16; ++row) {
    const int64_t n = 256;
    std::vector<int32_t> d1(256), d2(256);
    for (auto& v : d1) v = static_cast<int32_t>(rng.Uniform(-(1 << 20), (1 << 20) - 1));
    for (auto& v : d2) v = static_cast<int32_t>(rng.Uniform(-(1 << 20), (1 << 20) - 1));
    const int64_t m1 = rng.Uniform(1 << 15, (1 << 16) - 1);
    const int64_t m2 = rng.Uniform(1 << 15, (1 << 16) - 1);
    std::vector<int32_t> h(256);
    const int64_t k1 = ResidualFromDelta(d1.data(), n, m1, 35, h.data());
    const int64_t k2 = ResidualAdd(h.data(), n, k1, d2.data(), m2, 42);
    // from-delta rounding (1/2 at 2^-k1), delta alignment (1/2 at 2^-k1), final renorm (1/2 at
    // 2^-k2).
    const double bound =
        std::ldexp(1.0, static_cast<int>(-k1)) + std::ldexp(0.5, static_cast<int>(-k2));
    for (size_t i = 0; i < h.size(); ++i) {
      const double want = std::ldexp(static_cast<double>(d1[i]) * static_cast<double>(m1), -35) +
                          std::ldexp(static_cast<double>(d2[i]) * static_cast<double>(m2), -42);
      const double got = std::ldexp(static_cast<double>(h[i]), static_cast<int>(-k2));
      if (std::fabs(got - want) > bound * (1 + 1e-12) && failures++ < 5) {
        ADD_FAILURE() << "row " << row << " index " << i << " expected " << want << " actual "
                      << got << " bound " << bound;
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(DV_CORE_SUITE(Residual), AdversarialRows) {
  constexpr int64_t kN = 3072;
  std::vector<int32_t> h(kN);
  // All equal, all negative, all zero, one outlier: band and exact values.
  {
    const std::vector<int16_t> d(kN, -3);
    const int64_t k = ResidualFromDelta(d.data(), kN, 1, 0, h.data());
    EXPECT_EQ(k, 25);  // max 3: lg 1, up 25
    EXPECT_EQ(std::count(h.begin(), h.end(), -3 * (1 << 25)), kN);
  }
  {
    const std::vector<int16_t> d(kN, 0);
    EXPECT_EQ(ResidualFromDelta(d.data(), kN, 12345, 7, h.data()), 7);
    EXPECT_EQ(std::count(h.begin(), h.end(), 0), kN);
  }
  {
    std::vector<int64_t> d(kN, 1);
    d[100] = int64_t{1} << 50;
    const int64_t k = ResidualFromDelta(d.data(), kN, 1, 0, h.data());
    EXPECT_EQ(k, -21);  // lg 50, 21 places down; the ones round to 0
    for (int64_t i = 0; i < kN; ++i) {
      ASSERT_EQ(h[static_cast<size_t>(i)], i == 100 ? (1 << 29) : 0) << "index " << i;
    }
  }
}

}  // namespace
}  // namespace dv
