// The float engine's small-batch GEMM and vector-matrix kernel (float_engine/small_gemm.h):
// every output bit for bit the summation order its header documents (emulated here with scalar
// std::fma, not the kernel's intrinsics), within the standard dot-product error bound of a long
// double product, and the same bits for any number of rows, row position, stride and thread count.
// Each kernel this CPU lacks is skipped with the reason.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "float_engine/small_gemm.h"
#include "os/thread_pool.h"

namespace dv {
namespace {

int Lanes(SmallGemmIsa isa) { return isa == SmallGemmIsa::kAvx512 ? 16 : 8; }

// The documented order: lane l accumulates x[i] * w[i], i = l mod L, by fused multiply-adds
// (missing tail lanes add 0 * 0), then the lanes are halved pairwise down to one.
float DocumentedDot(const float* x, const float* w, int64_t k, int lanes) {
  std::vector<float> acc(static_cast<size_t>(lanes), 0.0f);
  for (int64_t i0 = 0; i0 < k; i0 += lanes) {
    for (int l = 0; l < lanes; ++l) {
      const int64_t i = i0 + l;
      const float xv = i < k ? x[i] : 0.0f, wv = i < k ? w[i] : 0.0f;
      acc[static_cast<size_t>(l)] = std::fma(xv, wv, acc[static_cast<size_t>(l)]);
    }
  }
  for (int width = lanes / 2; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) {
      acc[static_cast<size_t>(l)] =
          acc[static_cast<size_t>(l)] + acc[static_cast<size_t>(l + width)];
    }
  }
  return acc[0];
}

struct Problem {
  int64_t m, k, n, ldx, ldy;
  std::vector<float> x, w;
};

Problem MakeProblem(int64_t m, int64_t k, int64_t n, uint32_t seed, int64_t pad = 0) {
  Problem p{m, k, n, k + pad, n + pad, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  p.x.resize(static_cast<size_t>(m * p.ldx));
  p.w.resize(static_cast<size_t>(n * k));
  for (float& v : p.x) v = normal(rng);
  for (float& v : p.w) v = normal(rng) * 0.05f;
  return p;
}

// The output with a sentinel in every padding slot, so a write outside [m, n] is seen.
constexpr float kSentinel = -12345.0f;

std::vector<float> Multiply(SmallGemmIsa isa, const Problem& p, int threads) {
  os::ThreadPool pool(threads);
  std::vector<float> y(static_cast<size_t>(p.m * p.ldy), kSentinel);
  SmallGemmXWt(isa, p.x.data(), p.ldx, p.m, p.k, p.w.data(), p.n, y.data(), p.ldy, pool);
  return y;
}

class SmallGemmTest : public ::testing::TestWithParam<SmallGemmIsa> {
 protected:
  void SetUp() override {
    if (!SmallGemmIsaSupported(GetParam())) {
      GTEST_SKIP() << "this CPU has no " << SmallGemmIsaName(GetParam()) << " (kernel not run)";
    }
  }
};

TEST_P(SmallGemmTest, EveryOutputIsTheDocumentedSum) {
  const SmallGemmIsa isa = GetParam();
  uint32_t seed = 1;
  for (int64_t m : {1, 2, 3, 4, 5, 7, 8, 9, 13, 16}) {
    for (int64_t k : {1, 5, 8, 15, 16, 17, 31, 33, 100, 1024}) {
      for (int64_t n : {1, 2, 3, 33, 70}) {
        const Problem p = MakeProblem(m, k, n, seed++, /*pad=*/3);
        const std::vector<float> y = Multiply(isa, p, 2);
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t j = 0; j < p.ldy; ++j) {
            const float got = y[static_cast<size_t>(r * p.ldy + j)];
            if (j >= n) {
              ASSERT_EQ(got, kSentinel) << "wrote padding at row " << r << " column " << j;
              continue;
            }
            const float want =
                DocumentedDot(p.x.data() + r * p.ldx, p.w.data() + j * k, k, Lanes(isa));
            ASSERT_EQ(got, want) << "m " << m << " k " << k << " n " << n << " at (" << r << ", "
                                 << j << ")";
          }
        }
      }
    }
  }
}

TEST_P(SmallGemmTest, WithinTheDotProductErrorBound) {
  // |fl(x . w) - x . w| <= gamma_k * sum |x_i w_i|, gamma_k = k u / (1 - k u), u = 2^-24, for
  // any summation order with or without fused multiply-adds (Higham, Accuracy and Stability of
  // Numerical Algorithms, 3.1); the exact value from long double products.
  const SmallGemmIsa isa = GetParam();
  for (int64_t k : {64, 1000, 3072}) {
    const Problem p = MakeProblem(8, k, 40, static_cast<uint32_t>(k));
    const std::vector<float> y = Multiply(isa, p, 1);
    const long double u = std::ldexp(1.0L, -24);
    const long double gamma =
        static_cast<long double>(k) * u / (1 - static_cast<long double>(k) * u);
    for (int64_t r = 0; r < p.m; ++r) {
      for (int64_t j = 0; j < p.n; ++j) {
        long double exact = 0, magnitude = 0;
        for (int64_t i = 0; i < k; ++i) {
          const long double t = static_cast<long double>(p.x[static_cast<size_t>(r * p.ldx + i)]) *
                                p.w[static_cast<size_t>(j * k + i)];
          exact += t;
          magnitude += std::fabs(t);
        }
        const long double err = std::fabs(y[static_cast<size_t>(r * p.ldy + j)] - exact);
        ASSERT_LE(err, gamma * magnitude) << "k " << k << " at (" << r << ", " << j << ")";
      }
    }
  }
}

// `multiply(problem, threads)`: the full call at 1 thread against 2-4 threads, and rows alone
// or in blocks at either end against the full call's rows, bit for bit -- every tile shape the
// kernels pick by row count (1-4, 5-8, more).
template <typename Multiply>
void ExpectSameBitsForAnyRowCountPositionAndThreads(const Problem& full, Multiply multiply) {
  const std::vector<float> reference = multiply(full, 1);
  for (int threads : {2, 3, 4}) {
    EXPECT_EQ(multiply(full, threads), reference) << threads << " threads";
  }
  for (int64_t m : {1, 2, 4, 5, 7, 8, 9, 11}) {
    for (int64_t r0 : {int64_t{0}, full.m - m}) {
      Problem part = full;
      part.m = m;
      part.x.assign(full.x.begin() + r0 * full.ldx, full.x.begin() + (r0 + m) * full.ldx);
      const std::vector<float> y = multiply(part, 2);
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < full.n; ++j) {
          ASSERT_EQ(
              std::bit_cast<uint32_t>(y[static_cast<size_t>(r * full.ldy + j)]),
              std::bit_cast<uint32_t>(reference[static_cast<size_t>((r0 + r) * full.ldy + j)]))
              << "rows [" << r0 << ", " << r0 + m << ") row " << r << " column " << j;
        }
      }
    }
  }
}

TEST_P(SmallGemmTest, SameBitsForAnyRowCountPositionAndThreads) {
  const SmallGemmIsa isa = GetParam();
  ExpectSameBitsForAnyRowCountPositionAndThreads(
      MakeProblem(kSmallGemmMaxRows, 200, 1000, 7),
      [isa](const Problem& p, int threads) { return Multiply(isa, p, threads); });
}

TEST_P(SmallGemmTest, OnTheCallingThreadTheSameBits) {
  const SmallGemmIsa isa = GetParam();
  const Problem p = MakeProblem(5, 130, 77, 21, /*pad=*/2);
  std::vector<float> y(static_cast<size_t>(p.m * p.ldy), kSentinel);
  SmallGemmXWtHere(isa, p.x.data(), p.ldx, p.m, p.k, p.w.data(), p.n, y.data(), p.ldy);
  EXPECT_EQ(y, Multiply(isa, p, 3));
}

// The kernels read x packed into a per-thread buffer whose last vector of a row is zero past k
// (an infinity there times a weight lane's 0 would be NaN): a call after one whose x held
// infinities in those places still gives the documented sums.
TEST_P(SmallGemmTest, AnEarlierCallsRowsNeverReachATail) {
  const SmallGemmIsa isa = GetParam();
  for (int64_t m : {1, 4, 8, 16}) {
    Problem wide = MakeProblem(m, 64, 3, 40);
    for (float& v : wide.x) v = std::numeric_limits<float>::infinity();
    // Fills the calling thread's packed rows with infinities (the pool's calls pack there too).
    const auto poison = [&] {
      std::vector<float> unused(static_cast<size_t>(m * wide.ldy));
      SmallGemmXWtHere(isa, wide.x.data(), wide.ldx, m, wide.k, wide.w.data(), wide.n,
                       unused.data(), wide.ldy);
    };
    for (int64_t k : {1, 17, 33}) {
      const Problem p = MakeProblem(m, k, 5, 41);
      std::vector<float> here(static_cast<size_t>(m * p.ldy));
      poison();
      SmallGemmXWtHere(isa, p.x.data(), p.ldx, m, k, p.w.data(), p.n, here.data(), p.ldy);
      poison();
      const std::vector<float> pooled = Multiply(isa, p, 1);
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < p.n; ++j) {
          const float want =
              DocumentedDot(p.x.data() + r * p.ldx, p.w.data() + j * k, k, Lanes(isa));
          const auto at = static_cast<size_t>(r * p.ldy + j);
          ASSERT_EQ(std::bit_cast<uint32_t>(here[at]), std::bit_cast<uint32_t>(want))
              << "m " << m << " k " << k << " at (" << r << ", " << j << ")";
          ASSERT_EQ(std::bit_cast<uint32_t>(pooled[at]), std::bit_cast<uint32_t>(want))
              << "m " << m << " k " << k << " at (" << r << ", " << j << "), pool";
        }
      }
    }
  }
}

TEST_P(SmallGemmTest, VecMatIsTheDocumentedSum) {
  // o[c] = sum_j p[j] v[j, c]: fused multiply-adds from 0 in increasing j, for every width
  // around the kernels' vector and register-block sizes, rows of v with padding.
  const SmallGemmIsa isa = GetParam();
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t s : {0, 1, 2, 7, 300}) {
    for (int64_t d : {1, 5, 8, 16, 17, 64, 100, 128, 129, 200}) {
      const int64_t ldv = d + 3;
      std::vector<float> p(static_cast<size_t>(s)), v(static_cast<size_t>(s * ldv));
      for (float& x : p) x = normal(rng);
      for (float& x : v) x = normal(rng);
      std::vector<float> o(static_cast<size_t>(d + 4), kSentinel);
      SmallVecMatHere(isa, p.data(), s, v.data(), ldv, d, o.data());
      for (int64_t c = 0; c < d; ++c) {
        float want = 0.0f;
        for (int64_t j = 0; j < s; ++j) {
          want = std::fma(p[static_cast<size_t>(j)], v[static_cast<size_t>(j * ldv + c)], want);
        }
        ASSERT_EQ(o[static_cast<size_t>(c)], want) << "s " << s << " d " << d << " column " << c;
      }
      for (int64_t c = d; c < d + 4; ++c) {
        ASSERT_EQ(o[static_cast<size_t>(c)], kSentinel) << "wrote past d = " << d;
      }
    }
  }
}

TEST_P(SmallGemmTest, NonFiniteInputsPropagate) {
  const SmallGemmIsa isa = GetParam();
  Problem p = MakeProblem(3, 40, 5, 11);
  p.x[static_cast<size_t>(1 * p.ldx + 17)] = std::numeric_limits<float>::quiet_NaN();
  p.w[static_cast<size_t>(4 * p.k + 39)] = std::numeric_limits<float>::infinity();
  const std::vector<float> y = Multiply(isa, p, 2);
  for (int64_t j = 0; j < p.n; ++j) EXPECT_TRUE(std::isnan(y[static_cast<size_t>(p.ldy + j)]));
  EXPECT_TRUE(std::isinf(y[static_cast<size_t>(4)]));
  EXPECT_TRUE(std::isfinite(y[static_cast<size_t>(0)]));
}

// bfloat16 weights (their bit patterns): each widened exactly in the kernel, so every output is
// bit for bit the fp32 call's on the widened values, for every row count, every k around the
// vector widths (tails included) and weights of every kind: signed zeros, subnormals, the
// largest finite values, infinities and NaNs.
TEST_P(SmallGemmTest, Bf16WeightsGiveTheBitsOfTheirFp32Values) {
  const SmallGemmIsa isa = GetParam();
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  uint32_t seed = 100;
  for (int64_t m : {1, 2, 4, 5, 8, 16}) {
    for (int64_t k : {1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1024}) {
      for (int64_t n : {1, 3, 33, 70}) {
        Problem p = MakeProblem(m, k, n, seed++, /*pad=*/2);
        // Exactly n * k values: a read past the last weight would leave the vector.
        std::vector<uint16_t> bits(static_cast<size_t>(n * k));
        for (size_t i = 0; i < bits.size(); ++i) {
          bits[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(normal(rng) * 0.05f) >> 16);
        }
        if (n * k >= 8) {
          const uint16_t specials[] = {0x8000, 0x0001, 0x807f, 0x7f7f, 0xff7f, 0x0080};
          for (size_t i = 0; i < std::size(specials); ++i)
            bits[(i * 7919) % bits.size()] = specials[i];
        }
        for (size_t i = 0; i < bits.size(); ++i) {
          p.w[i] = std::bit_cast<float>(static_cast<uint32_t>(bits[i]) << 16);
        }
        os::ThreadPool pool(2);
        std::vector<float> y(static_cast<size_t>(p.m * p.ldy), kSentinel);
        SmallGemmXWt(isa, p.x.data(), p.ldx, p.m, p.k, bits.data(), p.n, y.data(), p.ldy, pool);
        const std::vector<float> want = Multiply(isa, p, 1);
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(want[i]))
              << "m " << m << " k " << k << " n " << n << " output " << i;
        }
      }
    }
  }
  // Non-finite weights propagate as their fp32 values do.
  Problem p = MakeProblem(2, 40, 3, 9);
  std::vector<uint16_t> bits(static_cast<size_t>(p.n * p.k), 0x3f80);  // 1.0
  bits[39] = 0x7f80;                                                   // +inf, row 0
  bits[static_cast<size_t>(p.k + 3)] = 0x7fc0;                         // NaN, row 1
  os::ThreadPool pool(1);
  std::vector<float> y(static_cast<size_t>(p.m * p.ldy));
  SmallGemmXWt(isa, p.x.data(), p.ldx, p.m, p.k, bits.data(), p.n, y.data(), p.ldy, pool);
  for (int64_t r = 0; r < p.m; ++r) {
    EXPECT_TRUE(std::isinf(y[static_cast<size_t>(r * p.ldy)]) ||
                std::isnan(y[static_cast<size_t>(r * p.ldy)]));
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(r * p.ldy + 1)]));
    EXPECT_TRUE(std::isfinite(y[static_cast<size_t>(r * p.ldy + 2)]));
  }
}

// The bf16 weights' own row and thread invariance (not only through the fp32 call above).
TEST_P(SmallGemmTest, Bf16SameBitsForAnyRowCountPositionAndThreads) {
  const SmallGemmIsa isa = GetParam();
  const Problem full = MakeProblem(kSmallGemmMaxRows, 200, 1000, 17);
  std::vector<uint16_t> bits(full.w.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    bits[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(full.w[i]) >> 16);
  }
  ExpectSameBitsForAnyRowCountPositionAndThreads(full, [&](const Problem& p, int threads) {
    os::ThreadPool pool(threads);
    std::vector<float> y(static_cast<size_t>(p.m * p.ldy), kSentinel);
    SmallGemmXWt(isa, p.x.data(), p.ldx, p.m, p.k, bits.data(), p.n, y.data(), p.ldy, pool);
    return y;
  });
}

INSTANTIATE_TEST_SUITE_P(Kernels, SmallGemmTest,
                         ::testing::Values(SmallGemmIsa::kAvx2, SmallGemmIsa::kAvx512),
                         [](const ::testing::TestParamInfo<SmallGemmIsa>& param) {
                           return std::string(SmallGemmIsaName(param.param));
                         });

TEST(SmallGemm, TheMachineChoiceIsSupportedAndOffMeansNone) {
  EXPECT_TRUE(SmallGemmIsaSupported(SmallGemmIsaForThisMachine()));
  EXPECT_TRUE(SmallGemmIsaSupported(SmallGemmIsa::kNone));
  setenv("DETVERIFY_FLOAT_SMALL_GEMM", "off", 1);
  EXPECT_EQ(SmallGemmIsaForThisMachine(), SmallGemmIsa::kNone);
  unsetenv("DETVERIFY_FLOAT_SMALL_GEMM");
}

}  // namespace
}  // namespace dv
