// engine/intmath.h: every primitive against its one-line contract, on negative values and on the
// int64 edges DetLLM's torch arithmetic reaches (COMPAT.md §2, §6, §8).
//
// Expected values come from three independent sources: the examples DetLLM states in its own
// tests (tests/test_intmath.py), exact __int128 arithmetic (exact_reference.h), and, for the
// wrapped edges, Python integers reduced mod 2^64 as torch's int64 does (python3, no torch):
//   w = lambda x: ((x + 2**63) % 2**64) - 2**63                        # int64 wrap
//   shl = lambda a, k: 0 if k >= 64 else w(a << k)                      # bitwise_left_shift
//   shr = lambda a, k: a >> k if k < 64 else (-1 if a < 0 else 0)       # bitwise_right_shift
//   rhad = lambda a, b: w((-1 if a < 0 else 1) * w(w(w(abs(a)) + b // 2) // b))
//   rsr = lambda a, k: a if k == 0 else shr(w(a + shl(1, k - 1)), k)    # rshift_round
// e.g. rhad(-2**63, 3) = 3074457345618258603 and rsr(2**63 - 1, 62) = -2.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "engine/intmath.h"
#include "tests/core/exact_reference.h"
#include "tests/core/suite_name.h"

namespace dv {
namespace {

using test::FloorDiv128;
using test::Int128;
using test::ToString;
using test::WrapTo64;

constexpr int64_t kMin = INT64_MIN;
constexpr int64_t kMax = INT64_MAX;

// Boundary values used by several tests: 0, +-1, +-2^j and +-2^j +- 1 for every j, the extremes.
std::vector<int64_t> BoundaryValues() {
  std::vector<int64_t> v = {0, 1, -1, 2, -2, 3, -3, kMin, kMin + 1, kMax, kMax - 1};
  for (int j = 1; j < 63; ++j) {
    const int64_t p = int64_t{1} << j;
    for (int64_t x : {p - 1, p, p + 1}) {
      v.push_back(x);
      v.push_back(-x);
    }
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Wrapping add / sub / mul / neg / abs.

static_assert(WrapAdd(kMax, 1) == kMin);
static_assert(WrapNeg(kMin) == kMin);
static_assert(RoundingShiftRight(3, 1) == 2);

TEST(DV_CORE_SUITE(IntMathWrap), Edges) {
  EXPECT_EQ(WrapAdd(kMax, 1), kMin);
  EXPECT_EQ(WrapAdd(kMin, -1), kMax);
  EXPECT_EQ(WrapAdd(kMax, kMax), -2);
  EXPECT_EQ(WrapAdd(kMin, kMin), 0);
  EXPECT_EQ(WrapSub(kMin, 1), kMax);
  EXPECT_EQ(WrapSub(0, kMin), kMin);
  EXPECT_EQ(WrapSub(-1, kMax), kMin);
  EXPECT_EQ(WrapMul(kMin, -1), kMin);
  EXPECT_EQ(WrapMul(int64_t{1} << 32, int64_t{1} << 32), 0);
  EXPECT_EQ(WrapMul(int64_t{1} << 62, 2), kMin);
  EXPECT_EQ(WrapMul(-(int64_t{1} << 62), 2), kMin);
  // 3 * 0x5555555555555556 = 2^64 + 2.
  EXPECT_EQ(WrapMul(3, 0x5555555555555556LL), 2);
  EXPECT_EQ(WrapMul(kMax, kMax), 1);  // (2^63 - 1)^2 = 2^126 - 2^64 + 1.
  EXPECT_EQ(WrapNeg(kMin), kMin);
  EXPECT_EQ(WrapNeg(kMax), kMin + 1);
  EXPECT_EQ(WrapNeg(5), -5);
  EXPECT_EQ(WrapNeg(0), 0);
  EXPECT_EQ(WrapAbs(kMin), kMin);  // torch.abs(INT64_MIN) stays INT64_MIN (COMPAT §8).
  EXPECT_EQ(WrapAbs(kMin + 1), kMax);
  EXPECT_EQ(WrapAbs(-5), 5);
  EXPECT_EQ(WrapAbs(5), 5);
  EXPECT_EQ(WrapAbs(0), 0);
}

TEST(DV_CORE_SUITE(IntMathWrap), MatchesArithmeticModulo2To64) {
  test::SplitMix64 rng(1);
  const std::vector<int64_t> edges = BoundaryValues();
  int failures = 0;
  for (int i = 0; i < 200000 && failures < 5; ++i) {
    const int64_t a =
        i < static_cast<int>(edges.size()) ? edges[static_cast<size_t>(i)] : rng.AnyMagnitude();
    const int64_t b = rng.AnyMagnitude();
    const int64_t want_add = WrapTo64(Int128{a} + b);
    const int64_t want_sub = WrapTo64(Int128{a} - b);
    const int64_t want_mul = WrapTo64(Int128{a} * b);
    const int64_t want_neg = WrapTo64(-Int128{a});
    const bool want_overflow = Int128{a} * b != Int128{want_mul};
    if (WrapAdd(a, b) != want_add || WrapSub(a, b) != want_sub || WrapMul(a, b) != want_mul ||
        WrapNeg(a) != want_neg || MulOverflows(a, b) != want_overflow) {
      ++failures;
      ADD_FAILURE() << "a=" << a << " b=" << b << " add " << WrapAdd(a, b) << " want " << want_add
                    << ", sub " << WrapSub(a, b) << " want " << want_sub << ", mul "
                    << WrapMul(a, b) << " want " << want_mul << ", neg " << WrapNeg(a) << " want "
                    << want_neg << ", overflow " << MulOverflows(a, b) << " want " << want_overflow;
    }
  }
}

TEST(DV_CORE_SUITE(IntMathWrap), MulOverflowsEdges) {
  EXPECT_TRUE(MulOverflows(int64_t{1} << 32, int64_t{1} << 31));      // 2^63
  EXPECT_FALSE(MulOverflows(int64_t{1} << 31, int64_t{1} << 31));     // 2^62
  EXPECT_FALSE(MulOverflows(-(int64_t{1} << 32), int64_t{1} << 31));  // -2^63 fits
  EXPECT_TRUE(MulOverflows(kMin, -1));
  EXPECT_FALSE(MulOverflows(kMin, 1));
  // The quantizer's wrap site (COMPAT §8): a = 2^48 times m = 2^15 is 2^63.
  EXPECT_TRUE(MulOverflows(int64_t{1} << 48, int64_t{1} << 15));
  EXPECT_FALSE(MulOverflows((int64_t{1} << 48) - 1, int64_t{1} << 15));
}

TEST(DV_CORE_SUITE(IntMathWrap), MaxMin) {
  EXPECT_EQ(Max(kMin, kMax), kMax);
  EXPECT_EQ(Max(-3, -7), -3);
  EXPECT_EQ(Min(kMin, kMax), kMin);
  EXPECT_EQ(Min(-3, -7), -7);
}

// ---------------------------------------------------------------------------------------------
// FloorDiv: Python floor division (torch rounding_mode="floor").

TEST(DV_CORE_SUITE(IntMathFloorDiv), DetllmExamples) {
  // DetLLM tests/test_intmath.py TestFloorDiv.test_python_semantics_scalar.
  EXPECT_EQ(FloorDiv(7, 2), 3);
  EXPECT_EQ(FloorDiv(-7, 2), -4);  // floor, not C truncation (-3)
  EXPECT_EQ(FloorDiv(-8, 2), -4);
  EXPECT_EQ(FloorDiv(-1, 4), -1);
  EXPECT_EQ(FloorDiv(0, 5), 0);
}

TEST(DV_CORE_SUITE(IntMathFloorDiv), NegativeDivisors) {
  EXPECT_EQ(FloorDiv(7, -2), -4);  // -3.5 -> -4
  EXPECT_EQ(FloorDiv(-7, -2), 3);  // 3.5 -> 3
  EXPECT_EQ(FloorDiv(1, -4), -1);  // -0.25 -> -1
  EXPECT_EQ(FloorDiv(-1, -4), 0);  // 0.25 -> 0
  EXPECT_EQ(FloorDiv(8, -2), -4);
  EXPECT_EQ(FloorDiv(0, -3), 0);
  EXPECT_EQ(FloorDiv(5, -1), -5);
}

TEST(DV_CORE_SUITE(IntMathFloorDiv), Int64Edges) {
  EXPECT_EQ(FloorDiv(kMin, -1), kMin);  // 2^63 does not fit: wraps to INT64_MIN
  EXPECT_EQ(FloorDiv(kMin, 1), kMin);
  EXPECT_EQ(FloorDiv(kMax, -1), -kMax);
  EXPECT_EQ(FloorDiv(kMin, 2), -(int64_t{1} << 62));
  EXPECT_EQ(FloorDiv(kMin, kMax), -2);  // -(2^63)/(2^63-1) = -1.0000000001 -> -2
  EXPECT_EQ(FloorDiv(kMax, kMin), -1);  // -0.99999 -> -1
  EXPECT_EQ(FloorDiv(kMin, kMin), 1);
  EXPECT_EQ(FloorDiv(-1, kMin), 0);  // 2^-63 -> 0
  EXPECT_EQ(FloorDiv(1, kMin), -1);  // -2^-63 -> -1
  EXPECT_EQ(FloorDiv(kMax, kMax), 1);
  EXPECT_EQ(FloorDiv(kMax - 1, kMax), 0);
  EXPECT_EQ(FloorDiv(kMin + 1, -1), kMax);
  EXPECT_EQ(FloorDiv(5, 0), 0);  // invariant violation: documented to return 0
}

// check(a, b) over small operands, every pair of boundary values and 300,000 random pairs.
template <typename F>
void ForEachDivision(test::SplitMix64& rng, F check) {
  for (int64_t a = -300; a <= 300; ++a) {
    for (int64_t b = -20; b <= 20; ++b) check(a, b);
  }
  const std::vector<int64_t> edges = BoundaryValues();
  for (int64_t a : edges) {
    for (int64_t b : edges) check(a, b);
  }
  for (int i = 0; i < 300000; ++i) check(rng.AnyMagnitude(), rng.AnyMagnitude());
}

// q is floor(a/b) iff b*q <= a < b*(q+1) for b > 0, b*q >= a > b*(q+1) for b < 0.
TEST(DV_CORE_SUITE(IntMathFloorDiv), SatisfiesFloorContract) {
  test::SplitMix64 rng(2);
  int failures = 0;
  auto check = [&](int64_t a, int64_t b) {
    if (b == 0 || (a == kMin && b == -1)) return;
    const Int128 q = FloorDiv(a, b);
    const Int128 lo = Int128{b} * q;
    const Int128 hi = Int128{b} * (q + 1);
    const bool ok = b > 0 ? (lo <= a && a < hi) : (lo >= a && a > hi);
    if (!ok && failures++ < 5) {
      ADD_FAILURE() << "FloorDiv(" << a << ", " << b << ") = " << ToString(q)
                    << ", want floor = " << ToString(FloorDiv128(a, b));
    }
  };
  ForEachDivision(rng, check);
  EXPECT_EQ(failures, 0);
}

// The device's integer-only division (DivideBySteps, TruncDivBySteps) against the exact 128-bit
// quotient and remainder: every boundary pair, small operands, random magnitudes.
TEST(DV_CORE_SUITE(IntMathFloorDiv), DivisionByStepsIsExact) {
  test::SplitMix64 rng(3);
  int failures = 0;
  auto check = [&](int64_t a, int64_t b) {
    if (b == 0 || (a == kMin && b == -1)) return;
    int64_t r = 0;
    const int64_t q = TruncDivBySteps(a, b, &r);
    const Int128 want_q = Int128{a} / b, want_r = Int128{a} % b;
    if ((q != want_q || r != want_r) && failures++ < 5) {
      ADD_FAILURE() << "TruncDivBySteps(" << a << ", " << b << ") = " << q << " rem " << r
                    << ", want " << ToString(want_q) << " rem " << ToString(want_r);
    }
    const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    uint64_t ur = 0;
    const uint64_t uq = DivideBySteps(ua, ub, &ur);
    if ((uq != ua / ub || ur != ua % ub) && failures++ < 5) {
      ADD_FAILURE() << "DivideBySteps(" << ua << ", " << ub << ") = " << uq << " rem " << ur;
    }
  };
  ForEachDivision(rng, check);
  EXPECT_EQ(failures, 0);
}

// ---------------------------------------------------------------------------------------------
// RoundHalfAwayDiv: sign(a) * floor((|a| + floor(b/2)) / b), wrapping, for every b != 0.

TEST(DV_CORE_SUITE(IntMathRoundHalfAwayDiv), DetllmExamples) {
  // DetLLM TestRoundHalfAwayDiv.test_ties_away_from_zero / test_non_ties.
  EXPECT_EQ(RoundHalfAwayDiv(3, 2), 2);
  EXPECT_EQ(RoundHalfAwayDiv(-3, 2), -2);
  EXPECT_EQ(RoundHalfAwayDiv(5, 2), 3);
  EXPECT_EQ(RoundHalfAwayDiv(-5, 2), -3);
  EXPECT_EQ(RoundHalfAwayDiv(5, 4), 1);
  EXPECT_EQ(RoundHalfAwayDiv(-5, 4), -1);
  EXPECT_EQ(RoundHalfAwayDiv(7, 4), 2);
  EXPECT_EQ(RoundHalfAwayDiv(-7, 4), -2);
  EXPECT_EQ(RoundHalfAwayDiv(0, 7), 0);
}

// DetLLM TestRoundHalfAwayDiv.test_odd_divisor_no_ties: with b odd no exact half exists, so the
// result is the nearest integer to a/b.
TEST(DV_CORE_SUITE(IntMathRoundHalfAwayDiv), OddDivisorIsNearestInteger) {
  for (int64_t a = -50; a <= 50; ++a) {
    for (int64_t b : {3, 5, 7}) {
      const int64_t got = RoundHalfAwayDiv(a, b);
      // nearest: |2a - 2*got*b| < b
      const int64_t twice_err = 2 * a - 2 * got * b;
      EXPECT_LT(twice_err < 0 ? -twice_err : twice_err, b)
          << "a=" << a << " b=" << b << " got=" << got;
    }
  }
}

// For b > 0 and no wrap: 2*r*b - b <= 2|a| < 2*r*b + b on magnitudes, ties away from zero.
TEST(DV_CORE_SUITE(IntMathRoundHalfAwayDiv), PositiveDivisorIsNearestTiesAway) {
  test::SplitMix64 rng(3);
  int failures = 0;
  auto check = [&](int64_t a, int64_t b) {
    if (b <= 0 || a == kMin) return;
    const Int128 mag = a < 0 ? -Int128{a} : Int128{a};
    if (mag + b / 2 > kMax) return;  // the formula's |a| + floor(b/2) would wrap
    const Int128 want = test::RoundHalfAwayExact(a, b);
    const int64_t got = RoundHalfAwayDiv(a, b);
    if (Int128{got} != want && failures++ < 5) {
      ADD_FAILURE() << "RoundHalfAwayDiv(" << a << ", " << b << ") = " << got << ", want "
                    << ToString(want);
    }
  };
  for (int64_t a = -1000; a <= 1000; ++a) {
    for (int64_t b : {1, 2, 3, 8, 100, 127}) check(a, b);  // DetLLM's tensor sweep divisors
  }
  for (int i = 0; i < 300000; ++i) {
    const int64_t b = rng.AnyMagnitude();
    check(rng.AnyMagnitude(), b < 0 ? -b : b);
  }
  // Exact ties at large magnitudes.
  check((int64_t{1} << 61) + (int64_t{1} << 30), int64_t{1} << 31);
  check(-((int64_t{1} << 61) + (int64_t{1} << 30)), int64_t{1} << 31);
  EXPECT_EQ(failures, 0);
}

// b <= 0 and wrapped |a|: the tensor formula evaluated with torch's int64 semantics. Expected
// values from the Python emulation in the file header, e.g. rhad(5, -2):
// half = -2 // 2 = -1, (5 - 1) // -2 = -2, sign +1 -> -2.
TEST(DV_CORE_SUITE(IntMathRoundHalfAwayDiv), NonPositiveDivisorAndWrapEdges) {
  struct Case {
    int64_t a, b, want;
  };
  const std::array<Case, 17> cases = {{
      {5, -2, -2},
      {-5, -2, 2},
      {5, -3, -1},
      {7, -4, -2},
      {0, -5, 0},
      {1, -5, 0},
      {-1, -1, 0},  // not -1/-1 = 1: floor((1 + floor(-1/2)) / -1) = 0
      {-7, -7, 1},
      {6, -4, -1},
      {-6, -4, 1},
      {kMin, 2, int64_t{1} << 62},     // |INT64_MIN| stays negative
      {kMax, 4, -(int64_t{1} << 61)},  // |a| + 2 wraps
      {kMin, -1, kMax},
      {kMin, 1, kMin},
      {kMin, 3, 3074457345618258603LL},
      {kMax, 2, -(int64_t{1} << 62)},
      {kMax, -2, -(int64_t{1} << 62) + 1},
  }};
  for (const Case& c : cases) {
    EXPECT_EQ(RoundHalfAwayDiv(c.a, c.b), c.want) << "a=" << c.a << " b=" << c.b;
  }
  EXPECT_EQ(RoundHalfAwayDiv(5, 0), 0);  // invariant violation: documented to return 0
}

// ---------------------------------------------------------------------------------------------
// Shifts.

TEST(DV_CORE_SUITE(IntMathShift), DetllmAshrExamples) {
  // DetLLM TestAshr.
  EXPECT_EQ(ShiftRightArith(7, 1), 3);
  EXPECT_EQ(ShiftRightArith(-7, 1), -4);
  EXPECT_EQ(ShiftRightArith(-1, 5), -1);
  EXPECT_EQ(ShiftRightArith(5, 0), 5);
  const std::array<int64_t, 6> in = {-7, -8, -1, 0, 7, 8};
  const std::array<int64_t, 6> want = {-4, -4, -1, 0, 3, 4};
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(ShiftRightArith(in[i], 1), want[i]) << "index " << i;
  }
  EXPECT_EQ(ShiftRightArith(-(int64_t{1} << 40) - 1, 40), -2);
  EXPECT_EQ(ShiftRightArith((int64_t{1} << 40) + 1, 40), 1);
  for (int64_t a = -512; a < 512; ++a) {
    for (int64_t k : {0, 1, 3, 8}) {
      EXPECT_EQ(ShiftRightArith(a, k), static_cast<int64_t>(FloorDiv128(a, Int128{1} << k)))
          << "a=" << a << " k=" << k;
    }
  }
}

TEST(DV_CORE_SUITE(IntMathShift), RightShiftIsFloorForEveryCount) {
  test::SplitMix64 rng(4);
  std::vector<int64_t> values = BoundaryValues();
  for (int i = 0; i < 2000; ++i) values.push_back(rng.AnyMagnitude());
  int failures = 0;
  for (int64_t a : values) {
    for (int64_t k = 0; k < 64; ++k) {
      const Int128 want = FloorDiv128(a, Int128{1} << k);
      if (Int128{ShiftRightArith(a, k)} != want && failures++ < 5) {
        ADD_FAILURE() << "ShiftRightArith(" << a << ", " << k << ") = " << ShiftRightArith(a, k)
                      << ", want " << ToString(want);
      }
    }
    // Counts >= 64 (and negative counts) give the sign fill, as torch's bitwise_right_shift.
    for (int64_t k : {int64_t{64}, int64_t{65}, int64_t{100}, kMax, int64_t{-1}, kMin}) {
      const int64_t want = a < 0 ? -1 : 0;
      if (ShiftRightArith(a, k) != want && failures++ < 5) {
        ADD_FAILURE() << "ShiftRightArith(" << a << ", " << k << ") = " << ShiftRightArith(a, k)
                      << ", want sign fill " << want;
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(DV_CORE_SUITE(IntMathShift), LeftShiftWrapsTwosComplement) {
  EXPECT_EQ(ShiftLeftWrap(-3, 1), -6);
  EXPECT_EQ(ShiftLeftWrap(-1, 63), kMin);
  EXPECT_EQ(ShiftLeftWrap(1, 63), kMin);
  EXPECT_EQ(ShiftLeftWrap(3, 63), kMin);
  EXPECT_EQ(ShiftLeftWrap(int64_t{1} << 62, 1), kMin);
  EXPECT_EQ(ShiftLeftWrap(kMin, 1), 0);
  EXPECT_EQ(ShiftLeftWrap(kMax, 1), -2);
  EXPECT_EQ(ShiftLeftWrap(-5, 0), -5);
  test::SplitMix64 rng(5);
  std::vector<int64_t> values = BoundaryValues();
  for (int i = 0; i < 2000; ++i) values.push_back(rng.AnyMagnitude());
  int failures = 0;
  for (int64_t a : values) {
    for (int64_t k = 0; k < 64; ++k) {
      // a * 2^k reduced mod 2^64.
      const int64_t want = WrapTo64(Int128{a} * (Int128{1} << k));
      if (ShiftLeftWrap(a, k) != want && failures++ < 5) {
        ADD_FAILURE() << "ShiftLeftWrap(" << a << ", " << k << ") = " << ShiftLeftWrap(a, k)
                      << ", want " << want;
      }
    }
    for (int64_t k : {int64_t{64}, int64_t{65}, int64_t{1000}, kMax, int64_t{-1}, kMin}) {
      if (ShiftLeftWrap(a, k) != 0 && failures++ < 5) {
        ADD_FAILURE() << "ShiftLeftWrap(" << a << ", " << k << ") = " << ShiftLeftWrap(a, k)
                      << ", want 0";
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// ---------------------------------------------------------------------------------------------
// RoundingShiftRight: (a + 2^(k-1)) >> k with a wrapping add; ties toward +infinity.

TEST(DV_CORE_SUITE(IntMathRoundingShiftRight), DetllmExamples) {
  // DetLLM TestRshiftRound.test_formula / test_k_zero_identity / test_tensor_shift_amounts.
  EXPECT_EQ(RoundingShiftRight(3, 1), 2);    // 1.5 -> 2
  EXPECT_EQ(RoundingShiftRight(-3, 1), -1);  // -1.5 -> -1 (half up)
  EXPECT_EQ(RoundingShiftRight(5, 2), 1);    // 1.25 -> 1
  EXPECT_EQ(RoundingShiftRight(6, 2), 2);    // 1.5 -> 2
  EXPECT_EQ(RoundingShiftRight(-6, 2), -1);  // -1.5 -> -1
  EXPECT_EQ(RoundingShiftRight(7, 0), 7);
  EXPECT_EQ(RoundingShiftRight(-3, 0), -3);
  const std::array<int64_t, 7> a = {-1000, -6, -3, 0, 3, 6, 1000};
  const std::array<int64_t, 7> k = {3, 2, 1, 0, 1, 2, 3};
  const std::array<int64_t, 7> want = {-125, -1, -1, 0, 2, 2, 125};
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(RoundingShiftRight(a[i], k[i]), want[i]) << "index " << i;
  }
}

// Every k in 0..62 against floor((wrap(a + 2^(k-1))) / 2^k) computed in __int128; where the add
// does not wrap this is also checked to be the exact nearest value with ties toward +inf.
TEST(DV_CORE_SUITE(IntMathRoundingShiftRight), EveryCountAgainstExactReference) {
  test::SplitMix64 rng(6);
  std::vector<int64_t> values = BoundaryValues();
  for (int i = 0; i < 3000; ++i) values.push_back(rng.AnyMagnitude());
  for (int i = 0; i < 1000; ++i) values.push_back(rng.NextI64());
  int failures = 0;
  for (int64_t a : values) {
    for (int k = 0; k <= 62; ++k) {
      const int64_t got = RoundingShiftRight(a, k);
      if (k == 0) {
        if (got != a && failures++ < 5) ADD_FAILURE() << "k=0 must return a=" << a;
        continue;
      }
      const Int128 sum = Int128{a} + (Int128{1} << (k - 1));
      const Int128 want = FloorDiv128(WrapTo64(sum), Int128{1} << k);
      if (Int128{got} != want && failures++ < 5) {
        ADD_FAILURE() << "RoundingShiftRight(" << a << ", " << k << ") = " << got << ", want "
                      << ToString(want);
      }
      if (sum <= kMax) {
        const Int128 nearest = test::RoundHalfUpPow2Exact(a, k);
        if (Int128{got} != nearest && failures++ < 5) {
          ADD_FAILURE() << "RoundingShiftRight(" << a << ", " << k << ") = " << got
                        << ", nearest (ties up) is " << ToString(nearest);
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// Counts 63..65 and the wrapping add, from the Python emulation:
//   rsr(a, k) = a >> k on w(a + (1 << (k-1))) when k <= 63 (1 << 63 wraps to INT64_MIN for
//   k = 64: w(a + INT64_MIN) >> 64 is the sign fill); for k >= 65 the half is 0 and the shift
//   gives the sign fill of a.
TEST(DV_CORE_SUITE(IntMathRoundingShiftRight), LargeCountsAndWrappedAdd) {
  struct Case {
    int64_t a, k, want;
  };
  const std::array<Case, 11> cases = {{
      {kMax, 62, -2},  // kMax + 2^61 wraps negative
      {kMax, 63, -1},
      {kMin, 63, -1},
      {kMax, 64, -1},  // half = 1 << 63 = INT64_MIN
      {kMin, 64, 0},
      {5, 64, -1},
      {-5, 64, 0},
      {0, 64, -1},
      {kMax, 1, -(int64_t{1} << 62)},
      {5, 65, 0},
      {-5, 65, -1},
  }};
  for (const Case& c : cases) {
    EXPECT_EQ(RoundingShiftRight(c.a, c.k), c.want) << "a=" << c.a << " k=" << c.k;
  }
}

// ---------------------------------------------------------------------------------------------
// SaturateToInt8, Ilog2Floor, Isqrt.

TEST(DV_CORE_SUITE(IntMathSaturate), DetllmClampI8) {
  // DetLLM TestClamps.test_clamp_i8.
  const std::array<int64_t, 9> in = {-1000, -129, -128, -1, 0, 126, 127, 128, 1000};
  const std::array<int, 9> want = {-128, -128, -128, -1, 0, 126, 127, 127, 127};
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(static_cast<int>(SaturateToInt8(in[i])), want[i])
        << "index " << i << " input " << in[i];
  }
  EXPECT_EQ(SaturateToInt8(kMin), -128);
  EXPECT_EQ(SaturateToInt8(kMax), 127);
  EXPECT_EQ(SaturateToInt8((int64_t{1} << 32) + 5), 127);  // saturates, never truncates to 5
  EXPECT_EQ(SaturateToInt8(-(int64_t{1} << 32) + 5), -128);
  EXPECT_EQ(SaturateToInt8(256 + 3), 127);
}

TEST(DV_CORE_SUITE(IntMathIlog2Floor), DetllmExamples) {
  // DetLLM TestIlog2Floor.test_scalar / test_tensor_large.
  EXPECT_EQ(Ilog2Floor(1), 0);
  EXPECT_EQ(Ilog2Floor(2), 1);
  EXPECT_EQ(Ilog2Floor(3), 1);
  EXPECT_EQ(Ilog2Floor(4), 2);
  EXPECT_EQ(Ilog2Floor((int64_t{1} << 31) - 1), 30);
  EXPECT_EQ(Ilog2Floor(int64_t{1} << 31), 31);
  EXPECT_EQ(Ilog2Floor((int64_t{1} << 62) + 5), 62);
  EXPECT_EQ(Ilog2Floor((int64_t{1} << 30) - 1), 29);
  EXPECT_EQ(Ilog2Floor(int64_t{1} << 40), 40);
  EXPECT_EQ(Ilog2Floor((int64_t{1} << 62) + 123), 62);
}

TEST(DV_CORE_SUITE(IntMathIlog2Floor), PowersOfTwoAndNeighbours) {
  for (int j = 0; j <= 62; ++j) {
    const int64_t p = int64_t{1} << j;
    EXPECT_EQ(Ilog2Floor(p), j) << "2^" << j;
    EXPECT_EQ(Ilog2Floor(p + 1), j == 0 ? 1 : j) << "2^" << j << " + 1";
    if (j >= 1) {
      EXPECT_EQ(Ilog2Floor(p - 1), j == 1 ? 0 : j - 1) << "2^" << j << " - 1";
    }
  }
  EXPECT_EQ(Ilog2Floor(kMax), 62);
  // Values <= 0 give 0, as DetLLM's shift-and-compare loop does (COMPAT §8).
  EXPECT_EQ(Ilog2Floor(0), 0);
  EXPECT_EQ(Ilog2Floor(-1), 0);
  EXPECT_EQ(Ilog2Floor(-(int64_t{1} << 40)), 0);
  EXPECT_EQ(Ilog2Floor(kMin), 0);
}

TEST(DV_CORE_SUITE(IntMathIlog2Floor), ExhaustiveSmallAndRandom) {
  // DetLLM test_tensor_exhaustive_small: 1 .. 2^16 - 1.
  int failures = 0;
  for (int64_t a = 1; a < (int64_t{1} << 16); ++a) {
    if (Ilog2Floor(a) != test::Msb(a) && failures++ < 5) {
      ADD_FAILURE() << "Ilog2Floor(" << a << ") = " << Ilog2Floor(a) << ", want " << test::Msb(a);
    }
  }
  test::SplitMix64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const int64_t a = rng.AnyMagnitude();
    const int want = a > 0 ? test::Msb(a) : 0;
    if (Ilog2Floor(a) != want && failures++ < 5) {
      ADD_FAILURE() << "Ilog2Floor(" << a << ") = " << Ilog2Floor(a) << ", want " << want;
    }
  }
  EXPECT_EQ(failures, 0);
}

// r = Isqrt(a) iff r^2 <= a < (r+1)^2, checked in __int128.
bool IsFloorSqrt(int64_t a, int64_t r) {
  return r >= 0 && Int128{r} * r <= a && Int128{r + 1} * (r + 1) > a;
}

TEST(DV_CORE_SUITE(IntMathIsqrt), DetllmBoundaries) {
  // DetLLM TestIsqrt.test_scalar_boundaries; values from Python's math.isqrt.
  EXPECT_EQ(Isqrt(0), 0);
  EXPECT_EQ(Isqrt(1), 1);
  EXPECT_EQ(Isqrt(2), 1);
  EXPECT_EQ(Isqrt(3), 1);
  EXPECT_EQ(Isqrt(4), 2);
  EXPECT_EQ(Isqrt((int64_t{1} << 31) - 1), 46340);
  EXPECT_EQ(Isqrt(int64_t{1} << 31), 46340);
  EXPECT_EQ(Isqrt((int64_t{1} << 52) + 7), int64_t{1} << 26);
  EXPECT_EQ(Isqrt((int64_t{1} << 62) - 1), (int64_t{1} << 31) - 1);
  EXPECT_EQ(Isqrt(kMax), 3037000499);  // math.isqrt(2**63 - 1)
  // Negative inputs give 0: DetLLM's loop never subtracts from a negative remainder.
  EXPECT_EQ(Isqrt(-1), 0);
  EXPECT_EQ(Isqrt(kMin), 0);
}

TEST(DV_CORE_SUITE(IntMathIsqrt), ExhaustiveSmall) {
  // DetLLM test_scalar_exhaustive_small: 0 .. 69999.
  int failures = 0;
  for (int64_t a = 0; a < 70000; ++a) {
    if (!IsFloorSqrt(a, Isqrt(a)) && failures++ < 5) {
      ADD_FAILURE() << "Isqrt(" << a << ") = " << Isqrt(a);
    }
  }
  EXPECT_EQ(failures, 0);
}

// Every perfect square up to 2^32 (r in [0, 2^16]) and its neighbours.
TEST(DV_CORE_SUITE(IntMathIsqrt), EveryPerfectSquareUpTo2To32) {
  int failures = 0;
  for (int64_t r = 0; r <= (int64_t{1} << 16); ++r) {
    const int64_t sq = r * r;
    if (Isqrt(sq) != r && failures++ < 5) {
      ADD_FAILURE() << "Isqrt(" << sq << ") = " << Isqrt(sq) << ", want " << r;
    }
    if (r >= 1 && Isqrt(sq - 1) != r - 1 && failures++ < 5) {
      ADD_FAILURE() << "Isqrt(" << sq - 1 << ") = " << Isqrt(sq - 1) << ", want " << r - 1;
    }
    // (r+1)^2 > r^2 + 1 for r >= 1; r = 0 gives Isqrt(1) = 1.
    const int64_t want_next = r == 0 ? 1 : r;
    if (Isqrt(sq + 1) != want_next && failures++ < 5) {
      ADD_FAILURE() << "Isqrt(" << sq + 1 << ") = " << Isqrt(sq + 1) << ", want " << want_next;
    }
  }
  EXPECT_EQ(failures, 0);
}

// Perfect squares near INT64_MAX: r up to floor(sqrt(2^63 - 1)) = 3037000499, a random sample
// plus the last 20000 roots, and random int64.
TEST(DV_CORE_SUITE(IntMathIsqrt), LargeSquaresAndRandom) {
  constexpr int64_t kMaxRoot = 3037000499;
  test::SplitMix64 rng(8);
  std::vector<int64_t> roots;
  for (int i = 0; i < 300000; ++i) roots.push_back(rng.Uniform(int64_t{1} << 16, kMaxRoot));
  for (int64_t r = kMaxRoot - 20000; r <= kMaxRoot; ++r) roots.push_back(r);
  for (int j = 17; j <= 31; ++j) {
    roots.push_back(int64_t{1} << j);
    roots.push_back((int64_t{1} << j) - 1);
  }
  int failures = 0;
  for (int64_t r : roots) {
    const int64_t sq = r * r;  // r <= kMaxRoot: no overflow
    if (Isqrt(sq) != r && failures++ < 5) {
      ADD_FAILURE() << "Isqrt(" << sq << ") = " << Isqrt(sq) << ", want " << r;
    }
    if (Isqrt(sq - 1) != r - 1 && failures++ < 5) {
      ADD_FAILURE() << "Isqrt(" << sq - 1 << ") = " << Isqrt(sq - 1) << ", want " << r - 1;
    }
    if (sq < kMax && Isqrt(sq + 1) != r && failures++ < 5) {
      ADD_FAILURE() << "Isqrt(" << sq + 1 << ") = " << Isqrt(sq + 1) << ", want " << r;
    }
  }
  for (int i = 0; i < 1000000; ++i) {
    int64_t a = rng.NextI64();
    if (a < 0) a = WrapNeg(a) < 0 ? 0 : WrapNeg(a);
    if (i % 2 == 1) a >>= (rng.Next() % 63);  // every magnitude
    if (!IsFloorSqrt(a, Isqrt(a)) && failures++ < 5) {
      ADD_FAILURE() << "Isqrt(" << a << ") = " << Isqrt(a);
    }
  }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace dv
