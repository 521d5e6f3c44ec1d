// The float rows' statistics (float_contrast/float_contrast.h) on inputs whose answers are worked
// out by hand in the comments; the end-to-end check against numpy is in tests/harness
// (float_column_test.cc).
#include "float_contrast/float_contrast.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dv::float_contrast {
namespace {

std::vector<std::string> Chains(std::initializer_list<const char*> c) {
  return {c.begin(), c.end()};
}

TEST(FirstChainDivergence, FirstStepWhereAnyListDiffers) {
  const auto a = Chains({"x0", "x1", "x2", "x3"});
  const auto b = Chains({"x0", "x1", "y2", "y3"});
  const auto c = Chains({"x0", "z1", "z2", "z3"});
  EXPECT_EQ(FirstChainDivergence({&a, &b}), 2);
  EXPECT_EQ(FirstChainDivergence({&a, &b, &c}), 1);
  EXPECT_EQ(FirstChainDivergence({&a, &a}), std::nullopt);
  EXPECT_EQ(FirstChainDivergence({&a}), std::nullopt);
  // Only the steps every list has are compared: a prefix agrees.
  const auto shorter = Chains({"x0", "x1"});
  EXPECT_EQ(FirstChainDivergence({&a, &shorter}), std::nullopt);
}

TEST(FindTopTwo, LowestIndexWinsATie) {
  const std::vector<float> v = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  const TopTwo t = FindTopTwo(v);
  EXPECT_EQ(t.top1, 1);
  EXPECT_EQ(t.top2, 3);
  EXPECT_EQ(t.value1 - t.value2, 0.0f);
  const std::vector<float> w = {5.0f, 4.0f, 4.5f};
  EXPECT_EQ(FindTopTwo(w).top1, 0);
  EXPECT_EQ(FindTopTwo(w).top2, 2);
  const std::vector<float> x = {-2.0f, 7.0f};
  EXPECT_EQ(FindTopTwo(x).top1, 1);
  EXPECT_EQ(FindTopTwo(x).top2, 0);
}

TEST(ComputeCushion, LargestMoveAgainstSmallestMargin) {
  // Row 0 margin 4-2 = 2, row 1 margin 4.5-2.25 = 2.25, row 2 margin 3.75-2 = 1.75 (entry 0 vs 1).
  // |Δ| per pair: (0,1) max(0.5, 0.25, 0) = 0.5 at entry 0; (0,2) max(0.25, 0, 1) = 1 at entry 2;
  // (1,2) max(0.75, 0.25, 1) = 1 at entry 2, which (0,2) reached first.
  const std::vector<float> r0 = {4.0f, 2.0f, 1.0f};
  const std::vector<float> r1 = {4.5f, 2.25f, 1.0f};
  const std::vector<float> r2 = {3.75f, 2.0f, 0.0f};
  const auto c = ComputeCushion({r0, r1, r2});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->rows, 3);
  EXPECT_EQ(c->max_abs_delta, 1.0);
  EXPECT_EQ(c->delta_row_a, 0u);
  EXPECT_EQ(c->delta_row_b, 2u);
  EXPECT_EQ(c->delta_index, 2);
  EXPECT_EQ(c->min_margin, 1.75);
  EXPECT_EQ(c->margin_row, 2u);
  EXPECT_EQ(c->margin_top1, 0);
  EXPECT_EQ(c->margin_top2, 1);
  EXPECT_TRUE(c->finite);
  ASSERT_TRUE(c->Ratio().has_value());
  EXPECT_EQ(*c->Ratio(), 1.75);
}

TEST(ComputeCushion, DifferencesAreTakenInDouble) {
  // 1 + 2^-23 and 1 differ by 2^-23; 2^24 + 2 and 2^24 - 1 (both float32) differ by 3, the
  // largest move, found at entry 1.
  const std::vector<float> a = {1.0f + 0x1p-23f, 16777218.0f, 0.0f};
  const std::vector<float> b = {1.0f, 16777215.0f, 0.0f};
  const auto c = ComputeCushion({a, b});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->max_abs_delta, 3.0);
  EXPECT_EQ(c->delta_index, 1);
}

TEST(ComputeCushion, IdenticalRowsHaveNoRatio) {
  const std::vector<float> a = {0.5f, 0.25f};
  const auto c = ComputeCushion({a, a});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->max_abs_delta, 0.0);
  EXPECT_EQ(c->min_margin, 0.25);
  EXPECT_FALSE(c->Ratio().has_value());
}

TEST(ComputeCushion, NotComparable) {
  const std::vector<float> a = {1, 2, 3}, b = {1, 2};
  EXPECT_FALSE(ComputeCushion({a}).has_value());
  EXPECT_FALSE(ComputeCushion({}).has_value());
  EXPECT_FALSE(ComputeCushion({a, b}).has_value());
}

TEST(ComputeCushion, NonFiniteLogitsAreFlagged) {
  const std::vector<float> a = {1, NAN, 3}, b = {1, 2, 3};
  const auto c = ComputeCushion({a, b});
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->finite);
  EXPECT_FALSE(c->Ratio().has_value());
  const std::vector<float> inf = {1, INFINITY, 3};
  EXPECT_FALSE(ComputeCushion({inf, b})->finite);
}

TEST(CompareFloatRows, TokensAgreeWhileLogitsDiffer) {
  // The founding demo's picture: logits differ from step 0, tokens the same throughout.
  const auto la = Chains({"la0", "la1", "la2"}), lb = Chains({"lb0", "lb1", "lb2"});
  const auto t = Chains({"t0", "t1", "t2"});
  const std::vector<float> sa = {2, 1, 0}, sb = {2.5f, 1, 0};
  const FloatContrast c = CompareFloatRows({{&la, &t, sa}, {&lb, &t, sb}, {&la, &t, {}}});
  EXPECT_EQ(c.rows, 3);
  EXPECT_EQ(c.unique_logits, 2);
  EXPECT_EQ(c.unique_tokens, 1);
  EXPECT_TRUE(c.tokens_agree);
  EXPECT_EQ(c.first_token_divergence, std::nullopt);
  EXPECT_EQ(c.first_logits_divergence, 0);
  EXPECT_EQ(c.compared_steps, 3);
  EXPECT_EQ(c.rows_with_logits, 2);
  ASSERT_TRUE(c.cushion.has_value());
  EXPECT_EQ(c.cushion->max_abs_delta, 0.5);
  EXPECT_EQ(c.cushion->min_margin, 1.0);
}

TEST(CompareFloatRows, TokensPartAtAStep) {
  const auto l = Chains({"l0", "l1", "l2", "l3"});
  const auto ta = Chains({"t0", "t1", "a2", "a3"}), tb = Chains({"t0", "t1", "t2", "t3"});
  const FloatContrast c = CompareFloatRows({{&l, &ta, {}}, {&l, &tb, {}}});
  EXPECT_FALSE(c.tokens_agree);
  EXPECT_EQ(c.unique_tokens, 2);
  EXPECT_EQ(c.unique_logits, 1);
  EXPECT_EQ(c.first_token_divergence, 2);
  EXPECT_FALSE(c.cushion.has_value());
  EXPECT_EQ(c.rows_with_logits, 0);
}

TEST(CompareFloatRows, RowsOfDifferentLengthsDoNotAgree) {
  const auto l = Chains({"l0", "l1", "l2"}), l2 = Chains({"l0", "l1"});
  const auto t = Chains({"t0", "t1", "t2"}), t2 = Chains({"t0", "t1"});
  const FloatContrast c = CompareFloatRows({{&l, &t, {}}, {&l2, &t2, {}}});
  EXPECT_FALSE(c.tokens_agree);
  EXPECT_EQ(c.first_token_divergence, std::nullopt);
  EXPECT_EQ(c.compared_steps, 2);
}

TEST(CompareFloatRows, OneOrNoRow) {
  const auto l = Chains({"l0"}), t = Chains({"t0"});
  const FloatContrast one = CompareFloatRows({{&l, &t, {}}});
  EXPECT_EQ(one.rows, 1);
  EXPECT_TRUE(one.tokens_agree);
  EXPECT_EQ(one.unique_logits, 1);
  const FloatContrast none = CompareFloatRows({});
  EXPECT_EQ(none.rows, 0);
  EXPECT_FALSE(none.tokens_agree);
}

}  // namespace
}  // namespace dv::float_contrast
