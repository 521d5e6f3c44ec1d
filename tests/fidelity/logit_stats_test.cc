// The statistics of fidelity/logit_stats.h on inputs small enough to compute by hand, and the
// perplexity windows' protocol.
#include "fidelity/logit_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/expected_error.h"

namespace dv {
namespace {

TEST(LogitStats, LogSoftmaxOfAUniformAndAPeakedRow) {
  const std::vector<double> u = LogSoftmax(std::vector<double>{3.0, 3.0, 3.0, 3.0});
  for (double v : u) EXPECT_NEAR(v, -std::log(4.0), 1e-15);
  // [0, ln 3] -> probabilities 1/4, 3/4.
  const std::vector<double> p = LogSoftmax(std::vector<double>{0.0, std::log(3.0)});
  EXPECT_NEAR(p[0], std::log(0.25), 1e-15);
  EXPECT_NEAR(p[1], std::log(0.75), 1e-15);
  // Large values do not overflow.
  const std::vector<double> big = LogSoftmax(std::vector<double>{1000.0, 1000.0});
  EXPECT_NEAR(big[0], -std::log(2.0), 1e-15);
}

TEST(LogitStats, TopKBreaksTiesByLowerIndex) {
  EXPECT_EQ(TopK(std::vector<double>{1, 5, 5, 2, 5}, 3), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(TopKInt(std::vector<int64_t>{7, 7, 9}, 5), (std::vector<int64_t>{2, 0, 1}));
}

TEST(LogitStats, DequantizeIsLogitTimesHeadMantissaTimesRowScale) {
  // logits [3, -2], head_m [2^15, 3 * 2^14], row scale 5 / 2^(10 + 6).
  const std::vector<double> r =
      DequantizeLogits(std::vector<int32_t>{3, -2}, std::vector<int64_t>{32768, 49152}, 6, 5, 10);
  EXPECT_EQ(r[0], 3.0 * 32768 * 5 / 65536);
  EXPECT_EQ(r[1], -2.0 * 49152 * 5 / 65536);
}

// Row scale 1 / 2^0 with head_m 1: the int logits are the real ones.
void AddPlain(CompareAccumulator& acc, const std::vector<double>& f,
              const std::vector<int32_t>& i) {
  acc.Add(std::span<const double>(f), i, std::vector<int64_t>(f.size(), 1), 0, 1, 0);
}

TEST(LogitStats, CompareCountsAgreementContainmentKlAndL2) {
  CompareAccumulator acc({0.0, 1.0});
  // Position 1: same top-1 (index 2), identical logits: KL 0, L2 0.
  AddPlain(acc, {0, 1, 4, 2, 3, -1}, {0, 1, 4, 2, 3, -1});
  // Position 2: float top-1 index 0, int top-1 index 1 (in the float top-5 and vice versa).
  AddPlain(acc, {5, 4, 0, 0, 0, 0}, {4, 5, 0, 0, 0, 0});
  const CompareSummary& s = acc.summary();
  EXPECT_EQ(s.positions, 2);
  EXPECT_EQ(s.top1_agree, 1);
  EXPECT_EQ(s.int_top1_in_float_top5, 2);
  EXPECT_EQ(s.float_top1_in_int_top5, 2);
  EXPECT_EQ(s.int_top1, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(s.float_top1, (std::vector<int32_t>{2, 0}));
  // KL of position 2 by hand: p_f = softmax(5,4,0,0,0,0), p_i = softmax(4,5,0,0,0,0).
  const double z = std::exp(5.0) + std::exp(4.0) + 4.0;
  const double kl2 = (std::exp(5.0) / z) * 1.0 + (std::exp(4.0) / z) * -1.0;
  EXPECT_NEAR(s.kl_max, kl2, 1e-12);
  EXPECT_NEAR(s.kl_mean, kl2 / 2, 1e-12);
  EXPECT_NEAR(s.rel_l2_max, std::sqrt(2.0 / 41.0), 1e-15);
  // Gaps: position 1 gap 1 with sd(0,1,4,2,3,-1) = sqrt(17.5/5) = 1.87, 0.53 sd; position 2
  // gap 1 with sd(5,4,0,0,0,0) = sqrt(27.5/5) = 2.35, 0.43 sd: both under 1 sd.
  ASSERT_EQ(s.by_gap.size(), 2u);
  EXPECT_EQ(s.by_gap[0].positions, 2);
  EXPECT_EQ(s.by_gap[0].top1_agree, 1);
  EXPECT_EQ(s.by_gap[1].positions, 0);
  EXPECT_THROW(AddPlain(acc, {NAN, 0}, {0, 0}), ExpectedError);
}

TEST(LogitStats, PerplexityWindowsAreDetllmsSegmentsAtStrideCtx) {
  // 10 tokens, ctx 4, stride 4: segments [0,4) and [4,8), each scoring targets 1..3; the
  // trailing 2 tokens are no whole window.
  const auto w = PerplexityWindows(10, 4, 4);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].begin, 0);
  EXPECT_EQ(w[0].first_target, 1);
  EXPECT_EQ(w[1].begin, 4);
  EXPECT_EQ(w[1].first_target, 1);
}

TEST(LogitStats, PerplexityWindowsSlideWithoutScoringATargetTwice) {
  // ctx 4, stride 2 over 8 tokens: [0,4) scores 1..3, [2,6) scores 4..5, [4,8) scores 6..7.
  const auto w = PerplexityWindows(8, 4, 2);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[1].begin, 2);
  EXPECT_EQ(w[1].first_target, 2);
  EXPECT_EQ(w[2].begin, 4);
  EXPECT_EQ(w[2].first_target, 2);
  EXPECT_THROW(PerplexityWindows(3, 4, 4), ExpectedError);
  EXPECT_THROW(PerplexityWindows(8, 4, 5), ExpectedError);
  EXPECT_THROW(PerplexityWindows(8, 1, 1), ExpectedError);
}

TEST(LogitStats, PerplexityOfAUniformModelIsTheVocabulary) {
  PerplexityAccumulator acc;
  for (int32_t t = 0; t < 5; ++t) acc.Add(std::vector<double>(7, 0.25), t);
  acc.EndWindow();
  EXPECT_EQ(acc.summary().scored, 5);
  EXPECT_NEAR(acc.summary().ppl(), 7.0, 1e-12);
}

}  // namespace
}  // namespace dv
