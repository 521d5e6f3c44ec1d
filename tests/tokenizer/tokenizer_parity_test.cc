// Parity with Hugging Face `tokenizers` on the Qwen3 tokenizer: ids and decoded text of the
// fixtures written by scripts/tokenizer/make_parity_fixture.py.
#include <gtest/gtest.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/tokenizer/qwen3_test_data.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace dv::tok {
namespace {

using testing::FromHex;
using testing::Printable;
using testing::Qwen3TokenizerOrNull;
using testing::ReadJsonl;

constexpr size_t kMinEncodeCases = 2000;
constexpr int kMaxPrintedMismatches = 5;

#define DV_REQUIRE_QWEN3(tok)                                               \
  const Tokenizer* tok = Qwen3TokenizerOrNull();                            \
  if (tok == nullptr) {                                                     \
    GTEST_SKIP() << "no Qwen3 tokenizer.json at " << DefaultTokenizerPath() \
                 << " (set DETVERIFY_TOKENIZER)";                           \
  }

std::string Ids(const std::vector<int32_t>& ids) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < ids.size(); ++i) out << (i ? "," : "") << ids[i];
  out << "]";
  return out.str();
}

// The bytes a fixture row encodes: "text" (valid UTF-8) or "hex" (ill-formed UTF-8).
std::string RowBytes(const nlohmann::json& row) {
  return row.contains("hex") ? FromHex(row["hex"].get<std::string>())
                             : row["text"].get<std::string>();
}

// NFC of the whole string by ICU directly, independent of the tokenizer's segmenting.
std::string IcuNfc(const std::string& text) {
  UErrorCode status = U_ZERO_ERROR;
  std::string out;
  icu::StringByteSink<std::string> sink(&out);
  icu::Normalizer2::getNFCInstance(status)->normalizeUTF8(0, text, sink, nullptr, status);
  EXPECT_TRUE(U_SUCCESS(status));
  return out;
}

TEST(TokenizerParityTest, EncodeMatchesHuggingFace) {
  DV_REQUIRE_QWEN3(tok);
  const auto rows = ReadJsonl("qwen3_encode.jsonl");
  EXPECT_GE(rows.size(), kMinEncodeCases);
  int mismatches = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string bytes = RowBytes(rows[i]);
    const auto expected = rows[i]["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> actual = tok->Encode(bytes);
    if (actual != expected && ++mismatches <= kMaxPrintedMismatches) {
      ADD_FAILURE() << "case " << i << " text " << Printable(bytes, 300) << "\n  expected "
                    << Ids(expected) << "\n  actual   " << Ids(actual);
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << rows.size() << " cases";
}

TEST(TokenizerParityTest, DecodeOfEncodeMatchesHuggingFace) {
  DV_REQUIRE_QWEN3(tok);
  const auto rows = ReadJsonl("qwen3_encode.jsonl");
  int mismatches = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string expected =
        rows[i].contains("decoded") ? rows[i]["decoded"].get<std::string>() : RowBytes(rows[i]);
    const std::string actual = tok->Decode(rows[i]["ids"].get<std::vector<int32_t>>());
    if (actual != expected && ++mismatches <= kMaxPrintedMismatches) {
      ADD_FAILURE() << "case " << i << "\n  expected " << Printable(expected, 300)
                    << "\n  actual   " << Printable(actual, 300);
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << rows.size() << " cases";
}

// Qwen3's normalizer is NFC, so decoding gives back NFC(text), not text. Ill-formed input comes
// back as its U+FFFD repair.
TEST(TokenizerParityTest, RoundTripGivesNfcOfTheText) {
  DV_REQUIRE_QWEN3(tok);
  const auto rows = ReadJsonl("qwen3_encode.jsonl");
  int mismatches = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string bytes = RowBytes(rows[i]);
    const std::string expected = IcuNfc(RepairUtf8(bytes));
    const std::string actual = tok->Decode(tok->Encode(bytes));
    if (actual != expected && ++mismatches <= kMaxPrintedMismatches) {
      ADD_FAILURE() << "case " << i << " text " << Printable(bytes) << "\n  expected "
                    << Printable(expected) << "\n  actual   " << Printable(actual);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(TokenizerParityTest, DecodeMatchesHuggingFaceWithAndWithoutSpecialTokens) {
  DV_REQUIRE_QWEN3(tok);
  const auto rows = ReadJsonl("qwen3_decode.jsonl");
  ASSERT_GE(rows.size(), 100u);
  int mismatches = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto ids = rows[i]["ids"].get<std::vector<int32_t>>();
    for (const auto& [key, special] :
         {std::pair{"keep", SpecialTokens::kKeep}, std::pair{"skip", SpecialTokens::kSkip}}) {
      const std::string expected = rows[i][key].get<std::string>();
      const std::string actual = tok->Decode(ids, special);
      if (actual != expected && ++mismatches <= kMaxPrintedMismatches) {
        ADD_FAILURE() << "case " << i << " (" << key << ") ids " << Ids(ids) << "\n  expected "
                      << Printable(expected) << "\n  actual   " << Printable(actual);
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(TokenizerParityTest, LooksUpTokensAndIds) {
  DV_REQUIRE_QWEN3(tok);
  EXPECT_EQ(tok->VocabSize(), 151669);
  EXPECT_EQ(tok->TokenId("<|endoftext|>"), 151643);
  EXPECT_EQ(tok->TokenId("<|im_start|>"), 151644);
  EXPECT_EQ(tok->TokenId("<|im_end|>"), 151645);
  EXPECT_EQ(tok->TokenId("<think>"), 151667);
  EXPECT_EQ(tok->TokenId("</think>"), 151668);
  EXPECT_EQ(tok->TokenId("\xC4\xA0the"), 279);  // "Ġthe"
  EXPECT_EQ(tok->TokenId(" the"), -1);          // vocabulary strings are byte-level
  EXPECT_EQ(tok->TokenId("no such token in the vocabulary"), -1);
  EXPECT_EQ(tok->TokenText(279), "\xC4\xA0the");
  EXPECT_EQ(tok->TokenBytes(279), " the");
  EXPECT_EQ(tok->TokenText(151667), "<think>");
  EXPECT_EQ(tok->TokenBytes(151667), "<think>");
  EXPECT_EQ(tok->TokenText(-1), "");
  EXPECT_EQ(tok->TokenText(151669), "");
  EXPECT_EQ(tok->Encode("<think>"), (std::vector<int32_t>{151667}));
}

TEST(TokenizerParityTest, ArbitraryBytesNeverFailAndRoundTripAsRepaired) {
  DV_REQUIRE_QWEN3(tok);
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 256);
    const std::vector<int32_t> ids = tok->Encode(bytes);
    for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->VocabSize());
    ASSERT_EQ(tok->Decode(ids), IcuNfc(RepairUtf8(bytes))) << Printable(bytes);
  }
}

TEST(TokenizerParityTest, ConcurrentEncodesAgreeWithSequentialOnes) {
  DV_REQUIRE_QWEN3(tok);
  const auto rows = ReadJsonl("qwen3_encode.jsonl");
  const Tokenizer copy = *tok;  // copies share the model and its cache
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < failures.size(); ++t) {
    threads.emplace_back([&, t] {
      const Tokenizer& user = t % 2 == 0 ? *tok : copy;
      for (size_t i = t; i < rows.size(); i += 3) {
        if (user.Encode(RowBytes(rows[i])) != rows[i]["ids"].get<std::vector<int32_t>>()) {
          ++failures[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
}  // namespace dv::tok
