#include "tokenizer/bpe_merges.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/tokenizer/qwen3_test_data.h"
#include "tests/tokenizer/synthetic_tokenizer_json.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json.h"

namespace dv::tok {
namespace {

using testing::SyntheticTokenizerJson;

TEST(TokenizerBpeMergesTest, FindsMergesAndKeepsTheLastRankOfARepeatedPair) {
  const std::vector<MergeRule> rules = {{1, 2, 10}, {10, 3, 11}, {1, 2, 10}};
  const BpeMerges merges(rules);
  EXPECT_EQ(merges.size(), 2u);
  ASSERT_NE(merges.Find(1, 2), nullptr);
  EXPECT_EQ(merges.Find(1, 2)->rank, 2);
  EXPECT_EQ(merges.Find(1, 2)->merged, 10);
  EXPECT_EQ(merges.Find(10, 3)->rank, 1);
  EXPECT_EQ(merges.Find(2, 1), nullptr);
  EXPECT_EQ(BpeMerges().Find(1, 2), nullptr);
}

TEST(TokenizerBpeMergesTest, MergesLowestRankFirstAndLeftmostOnTies) {
  // a=97 b=98 c=99; aa=256 ab=257 bc=258
  const std::vector<MergeRule> rules = {{97, 97, 256}, {98, 99, 258}, {97, 98, 257}};
  const BpeMerges merges(rules);
  for (auto apply : {&ApplyMergesRescan, &ApplyMergesHeap}) {
    std::vector<int32_t> aaa = {97, 97, 97};
    apply(merges, aaa);
    EXPECT_EQ(aaa, (std::vector<int32_t>{256, 97}));
    std::vector<int32_t> abc = {97, 98, 99};  // "bc" outranks "ab"
    apply(merges, abc);
    EXPECT_EQ(abc, (std::vector<int32_t>{97, 258}));
    std::vector<int32_t> one = {97};
    apply(merges, one);
    EXPECT_EQ(one, (std::vector<int32_t>{97}));
  }
}

TEST(TokenizerBpeMergesTest, AcceptsBothMergeSpellings) {
  const std::vector<std::string> extra = {"ab", "abc",
                                          "\xC4\xA0"
                                          "ab"};
  const auto strings = nlohmann::json::array({"a b", "ab c", "\xC4\xA0 ab"});
  const auto pairs =
      nlohmann::json::array({nlohmann::json::array({"a", "b"}), nlohmann::json::array({"ab", "c"}),
                             nlohmann::json::array({"\xC4\xA0", "ab"})});
  const Tokenizer from_strings =
      Tokenizer::FromJson(SyntheticTokenizerJson(extra, strings).dump(), "strings.json");
  const Tokenizer from_pairs =
      Tokenizer::FromJson(SyntheticTokenizerJson(extra, pairs).dump(), "pairs.json");
  for (const Tokenizer* tok : {&from_strings, &from_pairs}) {
    EXPECT_EQ(tok->Encode("abc ab"), (std::vector<int32_t>{257, 258}));
    EXPECT_EQ(tok->Decode(tok->Encode("abc ab")), "abc ab");
  }
}

// The two merge loops are twins: the heap one must reproduce the rescan one on every word.
TEST(TokenizerBpeMergesTest, HeapLoopEqualsRescanLoopOnQwen3Merges) {
  const Tokenizer* qwen3 = testing::Qwen3TokenizerOrNull();
  if (qwen3 == nullptr) GTEST_SKIP() << "no Qwen3 tokenizer.json at " << DefaultTokenizerPath();
  std::vector<MergeRule> rules;
  {
    const std::string path = DefaultTokenizerPath();  // maybe the bundled .xz copy
    const TokenizerSpec spec = ParseTokenizerJson(ReadTokenizerText(path), path);
    for (const auto& [left, right] : spec.merges) {
      rules.push_back({qwen3->TokenId(left), qwen3->TokenId(right), qwen3->TokenId(left + right)});
    }
  }
  const BpeMerges merges(rules);
  const std::string alphabet = "  eeetaoinshrdlucmfwypvbgkqjxz,.'0123456789\n\xC3\xA9\xE4\xB8\xAD";
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t length = 1 + rng() % 300;
    std::vector<int32_t> rescan;
    for (size_t i = 0; i < length; ++i) {
      const auto byte = static_cast<unsigned char>(alphabet[rng() % alphabet.size()]);
      rescan.push_back(qwen3->TokenId(BytesToByteLevel(std::string(1, static_cast<char>(byte)))));
    }
    std::vector<int32_t> heap = rescan;
    ApplyMergesRescan(merges, rescan);
    ApplyMergesHeap(merges, heap);
    ASSERT_EQ(rescan, heap) << "trial " << trial;
  }
}

}  // namespace
}  // namespace dv::tok
