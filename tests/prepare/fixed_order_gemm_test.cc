// GemmFixedOrder computes, at every instruction-set level and thread count, exactly the plain
// triple loop's sums (k increasing from +0), bit for bit -- including the causal variants whose
// skipped parts are exact zeros.
#include "prepare/fixed_order_gemm.h"

#include <gtest/gtest.h>

#include <bit>
#include <vector>

#include "base/expected_error.h"
#include "engine/prng.h"

namespace dv {
namespace {

std::vector<double> Random(SplitMix64& rng, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = static_cast<double>(rng.Uniform(-(1 << 20), 1 << 20)) * 0x1.3p-17;
  return v;
}

// The reference: one sum per element, in index order (this file is compiled with
// -ffp-contract=off too).
std::vector<double> Plain(const std::vector<double>& x, const std::vector<double>& w, int64_t m,
                          int64_t k, int64_t n) {
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t t = 0; t < k; ++t)
        s = s + x[static_cast<size_t>(i * k + t)] * w[static_cast<size_t>(t * n + j)];
      y[static_cast<size_t>(i * n + j)] = s;
    }
  }
  return y;
}

void ExpectBits(const std::vector<double>& got, const std::vector<double>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint64_t>(got[i]), std::bit_cast<uint64_t>(want[i]))
        << what << " at " << i << ": " << got[i] << " vs " << want[i];
  }
}

TEST(FixedOrderGemm, EveryLevelAndThreadCountIsThePlainLoop) {
  SplitMix64 rng = TensorStream(7, "gemm");
  for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{
           {1, 1, 1}, {3, 5, 7}, {9, 17, 33}, {16, 64, 24}, {37, 130, 71}}) {
    const auto x = Random(rng, m * k), w = Random(rng, k * n);
    const auto want = Plain(x, w, m, k, n);
    for (GemmIsa isa : SupportedGemmIsas()) {
      for (int threads : {1, 2, 3}) {
        std::vector<double> y(static_cast<size_t>(m * n), -1.0);
        GemmRun run;
        run.threads = threads;
        run.isa = isa;
        GemmFixedOrder(x.data(), w.data(), y.data(), {m, k, n, 0, 0, 0}, run);
        ExpectBits(y, want, std::string(GemmIsaName(isa)) + " x" + std::to_string(threads));
      }
    }
  }
}

// Causal attention: scores need columns n <= m only; context sums p[m][k] v[k] with p zero for
// k > m.
TEST(FixedOrderGemm, CausalVariantsChangeNoNeededValue) {
  SplitMix64 rng = TensorStream(8, "gemm-causal");
  for (int64_t T : {1, 5, 13, 40}) {
    const int64_t d = 12;
    const auto q = Random(rng, T * d), kt = Random(rng, d * T);
    const auto scores = Plain(q, kt, T, d, T);
    auto p = Random(rng, T * T);
    for (int64_t i = 0; i < T; ++i) {
      for (int64_t j = i + 1; j < T; ++j) p[static_cast<size_t>(i * T + j)] = 0.0;
    }
    const auto v = Random(rng, T * d);
    const auto context = Plain(p, v, T, T, d);
    for (GemmIsa isa : SupportedGemmIsas()) {
      GemmRun run;
      run.isa = isa;
      run.causal_columns = true;
      std::vector<double> s(static_cast<size_t>(T * T), 0.0);
      GemmFixedOrder(q.data(), kt.data(), s.data(), {T, d, T, 0, 0, 0}, run);
      for (int64_t i = 0; i < T; ++i) {
        for (int64_t j = 0; j <= i; ++j) {
          ASSERT_EQ(s[static_cast<size_t>(i * T + j)], scores[static_cast<size_t>(i * T + j)])
              << GemmIsaName(isa) << " T " << T;
        }
      }
      run.causal_columns = false;
      run.causal_terms = true;
      std::vector<double> c(static_cast<size_t>(T * d));
      GemmFixedOrder(p.data(), v.data(), c.data(), {T, T, d, 0, 0, 0}, run);
      ExpectBits(c, context, std::string(GemmIsaName(isa)) + " context");
    }
  }
}

TEST(FixedOrderGemm, LevelNames) {
  for (GemmIsa isa : {GemmIsa::kBaseline, GemmIsa::kAvx2, GemmIsa::kAvx512}) {
    EXPECT_EQ(ParseGemmIsa(GemmIsaName(isa)), isa);
  }
  EXPECT_THROW(ParseGemmIsa("sse9"), ExpectedError);
  EXPECT_EQ(SupportedGemmIsas().front(), GemmIsa::kBaseline);
}

}  // namespace
}  // namespace dv
