// RowDivisor (engine/backends/cpu_divide.h): the multiply-shift quotient is floor(n / d) for every
// n in [0, 2^63), and RoundHalfAwayDiv equals the spec's definition for every int64 input.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/backends/cpu_divide.h"
#include "engine/intmath.h"
#include "tests/cpu_backend/cpu_test_support.h"

namespace dv {
namespace {

std::vector<uint64_t> EdgeDivisors() {
  std::vector<uint64_t> d = {1,
                             2,
                             3,
                             5,
                             7,
                             10,
                             127,
                             255,
                             641,
                             65535,
                             65536,
                             65537,
                             (uint64_t{1} << 32) - 1,
                             (uint64_t{1} << 32) + 1,
                             (uint64_t{1} << 63) - 1,
                             uint64_t{1} << 63,
                             ~uint64_t{0}};
  for (int k = 1; k < 64; ++k) {
    const uint64_t p = uint64_t{1} << k;
    d.push_back(p);
    d.push_back(p - 1);
    d.push_back(p + 1);
  }
  return d;
}

std::vector<uint64_t> EdgeDividends(uint64_t d) {
  const uint64_t top = (uint64_t{1} << 63) - 1;
  std::vector<uint64_t> n = {0, 1, 2, top, top - 1, top / 2, uint64_t{1} << 62};
  for (uint64_t m : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{1000}}) {
    if (d <= top / m) {
      n.push_back(d * m - 1);
      n.push_back(d * m);
      n.push_back(d * m + 1);
    }
  }
  // The largest multiple of d below 2^63 and its neighbours: where the multiply-shift error
  // term is largest.
  const uint64_t q = top / d;
  n.push_back(q * d);
  if (q * d > 0) n.push_back(q * d - 1);
  return n;
}

TEST(RowDivisor, QuotientAtEdges) {
  for (uint64_t d : EdgeDivisors()) {
    const RowDivisor div(d);
    for (uint64_t n : EdgeDividends(d)) {
      if (n >= (uint64_t{1} << 63)) continue;
      ASSERT_EQ(div.Quotient(n), n / d) << "n = " << n << ", d = " << d;
    }
  }
}

TEST(RowDivisor, QuotientRandom) {
  test::TestRng rng(1);
  for (int i = 0; i < 200000; ++i) {
    const int bits_d = static_cast<int>(rng.Uniform(0, 63));
    const uint64_t d = (rng.Next() >> (63 - bits_d)) | 1u;  // up to 64 bits, odd
    const uint64_t d2 = i % 3 == 0 ? d : (rng.Next() >> static_cast<int>(rng.Uniform(1, 63))) + 1;
    const uint64_t n = rng.Next() >> static_cast<int>(rng.Uniform(1, 63));
    const RowDivisor div(d2);
    ASSERT_EQ(div.Quotient(n), n / d2) << "n = " << n << ", d = " << d2;
  }
}

TEST(RowDivisor, RoundHalfAwayMatchesTheSpecEverywhere) {
  std::vector<int64_t> a = {0,
                            1,
                            -1,
                            2,
                            -2,
                            3,
                            -3,
                            kInt64Max,
                            kInt64Min,
                            kInt64Min + 1,
                            kInt64Max - 1,
                            int64_t{1} << 62,
                            -(int64_t{1} << 62)};
  test::TestRng rng(2);
  for (int i = 0; i < 2000; ++i)
    a.push_back(static_cast<int64_t>(rng.Next()) >> rng.Uniform(0, 62));
  std::vector<int64_t> divisors = {
      1, 2, 3, 4, 127, 128, 129, 46341, int64_t{1} << 40, (int64_t{1} << 62) + 1, kInt64Max};
  for (int i = 0; i < 200; ++i)
    divisors.push_back((static_cast<int64_t>(rng.Next() >> 1) >> rng.Uniform(0, 62)) | 1);
  for (int64_t d : divisors) {
    const RowDivisor div(static_cast<uint64_t>(d));
    for (int64_t x : a) {
      ASSERT_EQ(div.RoundHalfAwayDiv(x), RoundHalfAwayDiv(x, d)) << "a = " << x << ", d = " << d;
      // Also around the exact halves, where the rounding direction matters.
      const int64_t half = WrapMul(d, x % 1000);
      for (int64_t delta : {-1, 0, 1}) {
        const int64_t y = WrapAdd(WrapAdd(half, d >> 1), delta);
        ASSERT_EQ(div.RoundHalfAwayDiv(y), RoundHalfAwayDiv(y, d)) << "a = " << y << ", d = " << d;
      }
    }
  }
}

TEST(RowDivisor, MakeRoundShiftFollowsRoundingShiftRight) {
  for (int64_t k : {0, 1, 2, 13, 62, 63, 64, 65, 100}) {
    const RoundShift sh = MakeRoundShift(k);
    for (int64_t v :
         {int64_t{0}, int64_t{5}, int64_t{-5}, kInt64Max, kInt64Min, int64_t{1} << 40}) {
      EXPECT_EQ(ShiftRightArith(WrapAdd(v, sh.addend), sh.count), RoundingShiftRight(v, k))
          << "v = " << v << ", k = " << k;
    }
  }
}

}  // namespace
}  // namespace dv
