#include "tokenizer/added_tokens.h"

#include <gtest/gtest.h>

namespace dv::tok {
namespace {

TEST(TokenizerAddedTokensTest, FindsLeftmostThenLongest) {
  const AddedTokenMatcher matcher(
      {{"<a>", 1, true}, {"<a>b", 2, false}, {"a>", 3, true}, {"", 4, true}});
  auto m = matcher.FindNext("x<a>b<a>", 0);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->pos, 1u);
  EXPECT_EQ(m->len, 4u);
  EXPECT_EQ(m->id, 2);
  m = matcher.FindNext("x<a>b<a>", 5);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->pos, 5u);
  EXPECT_EQ(m->id, 1);
  // Prefixes of tokens are not matches.
  EXPECT_FALSE(matcher.FindNext("<<a", 0).has_value());
  EXPECT_FALSE(matcher.FindNext("<a", 0).has_value());
  // A failed walk from '<' does not hide the token starting one byte later.
  m = matcher.FindNext("<<a>", 0);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->pos, 1u);
  EXPECT_EQ(m->len, 3u);
  EXPECT_EQ(m->id, 1);
  m = matcher.FindNext("za>", 0);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->pos, 1u);
  EXPECT_EQ(m->id, 3);
}

TEST(TokenizerAddedTokensTest, EmptyMatcherFindsNothing) {
  const AddedTokenMatcher matcher;
  EXPECT_FALSE(matcher.FindNext("<|im_start|>", 0).has_value());
}

}  // namespace
}  // namespace dv::tok
