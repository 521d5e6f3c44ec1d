#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dv::tok {
namespace {

std::vector<std::string> Split(std::string_view text) {
  std::vector<std::string_view> pieces;
  SplitPretokens(text, pieces);
  return {pieces.begin(), pieces.end()};
}

using Pieces = std::vector<std::string>;

// Expected pieces are Hugging Face's Split(Regex(pattern), "isolated").pre_tokenize_str output.
TEST(TokenizerPretokenizerTest, SplitsWordsWithTheirLeadingCharacter) {
  EXPECT_EQ(Split("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(Split("!!hello"), (Pieces{"!!", "hello"}));
  EXPECT_EQ(Split("a\u00A0b"), (Pieces{"a", "\u00A0b"}));
  EXPECT_EQ(Split("x\t\ty"), (Pieces{"x", "\t", "\ty"}));
  EXPECT_EQ(Split("\u4ECA\u5929 abc"), (Pieces{"\u4ECA\u5929", " abc"}));
  EXPECT_EQ(Split("e\u0301t\u00E9"), (Pieces{"e", "\u0301t\u00E9"}));
  EXPECT_EQ(Split(""), Pieces{});
}

TEST(TokenizerPretokenizerTest, MatchesContractionsCaseInsensitively) {
  EXPECT_EQ(Split("he's"), (Pieces{"he", "'s"}));
  EXPECT_EQ(Split("HE'S I'LL we'Ve"), (Pieces{"HE", "'S", " I", "'LL", " we", "'Ve"}));
  EXPECT_EQ(Split("don't stop"), (Pieces{"don", "'t", " stop"}));
  EXPECT_EQ(Split("'sagt"), (Pieces{"'s", "agt"}));
  EXPECT_EQ(Split("rock'n'roll"), (Pieces{"rock", "'n", "'roll"}));
  EXPECT_EQ(Split("''s"), (Pieces{"''", "s"}));
  // U+017F LONG S case-folds to 's'.
  EXPECT_EQ(Split("he'\u017Ft"), (Pieces{"he", "'\u017F", "t"}));
}

TEST(TokenizerPretokenizerTest, SplitsNumbersIntoSingleDigits) {
  EXPECT_EQ(Split("12345"), (Pieces{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(Split("1a2b"), (Pieces{"1", "a", "2", "b"}));
  EXPECT_EQ(Split("\u0661\u0662x"), (Pieces{"\u0661", "\u0662", "x"}));
}

TEST(TokenizerPretokenizerTest, HandlesWhiteSpaceWithTheLookahead) {
  EXPECT_EQ(Split("x   y"), (Pieces{"x", "  ", " y"}));
  EXPECT_EQ(Split("x   "), (Pieces{"x", "   "}));
  EXPECT_EQ(Split("  "), (Pieces{"  "}));
  EXPECT_EQ(Split("a  !!"), (Pieces{"a", " ", " !!"}));
  EXPECT_EQ(Split("a\u00A0\u00A0b"), (Pieces{"a", "\u00A0", "\u00A0b"}));
}

TEST(TokenizerPretokenizerTest, KeepsNewlineRunsTogether) {
  EXPECT_EQ(Split("x \n\n  y"), (Pieces{"x", " \n\n", " ", " y"}));
  EXPECT_EQ(Split("\n\n\n"), (Pieces{"\n\n\n"}));
  EXPECT_EQ(Split(" \n \n "), (Pieces{" \n \n", " "}));
  EXPECT_EQ(Split("\r\n\r\nfoo"), (Pieces{"\r\n\r\n", "foo"}));
  EXPECT_EQ(Split("x \r\n y"), (Pieces{"x", " \r\n", " y"}));
  EXPECT_EQ(Split(" !!\n\nx"), (Pieces{" !!\n\n", "x"}));
  EXPECT_EQ(Split("?\n"), (Pieces{"?\n"}));
}

}  // namespace
}  // namespace dv::tok
