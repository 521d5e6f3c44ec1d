// The tokenizer and chat template of a GGUF file: SmolLM2's, against Hugging Face `tokenizers`
// with SmolLM2's pipeline and transformers' GGUF tokenizer (tests/tokenizer/data/smollm2_*.jsonl,
// written by scripts/tokenizer/make_smollm2_fixture.py), and metadata errors on crafted files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gguf/gguf_tokenizer.h"
#include "gguf/model_cache.h"
#include "tests/gguf/gguf_builder.h"
#include "tests/support/smollm2.h"
#include "tests/tokenizer/qwen3_test_data.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace dv::gguf {
namespace {

using testing::GgufBuilder;
using tok::testing::FromHex;
using tok::testing::ReadJsonl;

constexpr int kMaxPrintedMismatches = 5;

std::string RowBytes(const nlohmann::json& row) {
  return row.contains("hex") ? FromHex(row["hex"].get<std::string>())
                             : row["text"].get<std::string>();
}

std::string Ids(const std::vector<int32_t>& ids) { return nlohmann::json(ids).dump(); }

// SmolLM2's GGUF, opened once; nullptr when it is not installed.
const GgufFile* SmolLM2File() {
  static const std::unique_ptr<GgufFile> file = []() -> std::unique_ptr<GgufFile> {
    if (!std::filesystem::is_regular_file(SmolLM2Path())) return nullptr;
    return std::make_unique<GgufFile>(GgufFile::Open(SmolLM2Path()));
  }();
  return file.get();
}

const GgufTokenizer* SmolLM2Tokenizer() {
  static const std::unique_ptr<GgufTokenizer> tok = []() -> std::unique_ptr<GgufTokenizer> {
    if (SmolLM2File() == nullptr) return nullptr;
    return std::make_unique<GgufTokenizer>(LoadGgufTokenizer(*SmolLM2File()));
  }();
  return tok.get();
}

#define DV_REQUIRE_SMOLLM2_TOKENIZER(tok)                         \
  const GgufTokenizer* tok = SmolLM2Tokenizer();                  \
  if (tok == nullptr) {                                           \
    GTEST_SKIP() << ::dv::test::SmolLM2SkipReason(SmolLM2Path()); \
  }

TEST(GgufTokenizerTest, SmolLM2MetadataIsRead) {
  DV_REQUIRE_SMOLLM2_TOKENIZER(t);
  EXPECT_EQ(t->model, "gpt2");
  EXPECT_EQ(t->pre, "smollm");
  EXPECT_EQ(t->tokenizer.VocabSize(), 49152);
  EXPECT_EQ(t->tokenizer.pre_tokenizer(), tok::PreTokenizer::kDigitsGpt2);
  EXPECT_EQ(t->bos_id, 1);
  EXPECT_EQ(t->eos_id, 2);
  EXPECT_EQ(t->unk_id, 0);
  EXPECT_EQ(t->pad_id, 2);
  EXPECT_FALSE(t->add_bos);
  EXPECT_EQ(t->tokenizer.TokenText(1), "<|im_start|>");
  EXPECT_TRUE(t->tokenizer.IsSpecial(16));   // <empty_output>, the last CONTROL token
  EXPECT_FALSE(t->tokenizer.IsSpecial(17));  // "!"
  ASSERT_TRUE(t->chat.has_value());
  EXPECT_EQ(t->chat->kind(), tok::ChatTemplate::Kind::kSmolLM2);
  EXPECT_EQ(t->chat_template_source, tok::kSmolLM2ChatTemplate);
}

TEST(GgufTokenizerTest, SmolLM2EncodeMatchesHuggingFace) {
  DV_REQUIRE_SMOLLM2_TOKENIZER(t);
  const auto rows = ReadJsonl("smollm2_encode.jsonl");
  EXPECT_GE(rows.size(), 2000u);
  int mismatches = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string bytes = RowBytes(rows[i]);
    const auto expected = rows[i]["ids"].get<std::vector<int32_t>>();
    const auto actual = t->tokenizer.Encode(bytes);
    if (actual != expected && ++mismatches <= kMaxPrintedMismatches) {
      ADD_FAILURE() << "case " << i << " text " << nlohmann::json(tok::RepairUtf8(bytes)).dump()
                    << "\n  expected " << Ids(expected) << "\n  actual   " << Ids(actual);
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << rows.size() << " cases";
}

// The same vocabulary with a bare GPT-2 split gives transformers' GGUF tokenizer's ids: the
// vocabulary, merges and added tokens are read as transformers reads them, and the rows where the
// ids differ are exactly those where SmolLM2's Digits step matters.
TEST(GgufTokenizerTest, BareGpt2SplitMatchesTransformersGgufTokenizer) {
  if (SmolLM2File() == nullptr) GTEST_SKIP() << test::SmolLM2SkipReason(SmolLM2Path());
  tok::TokenizerSpec spec = GgufTokenizerSpec(*SmolLM2File());
  spec.pre_tokenizer = tok::PreTokenizer::kGpt2;
  const tok::Tokenizer bare = tok::Tokenizer::FromSpec(std::move(spec), "bare");
  const auto rows = ReadJsonl("smollm2_encode.jsonl");
  int mismatches = 0;
  int differing = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const char* key = rows[i].contains("ids_gpt2") ? "ids_gpt2" : "ids";
    differing += rows[i].contains("ids_gpt2") ? 1 : 0;
    const auto expected = rows[i][key].get<std::vector<int32_t>>();
    if (bare.Encode(RowBytes(rows[i])) != expected && ++mismatches <= kMaxPrintedMismatches) {
      ADD_FAILURE() << "case " << i << " expected " << Ids(expected);
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(differing, 0);
}

TEST(GgufTokenizerTest, SmolLM2DecodeMatchesHuggingFace) {
  DV_REQUIRE_SMOLLM2_TOKENIZER(t);
  for (const auto& row : ReadJsonl("smollm2_decode.jsonl")) {
    const auto ids = row["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(t->tokenizer.Decode(ids, tok::SpecialTokens::kKeep), row["keep"].get<std::string>())
        << Ids(ids);
    EXPECT_EQ(t->tokenizer.Decode(ids, tok::SpecialTokens::kSkip), row["skip"].get<std::string>())
        << Ids(ids);
  }
  for (const auto& row : ReadJsonl("smollm2_encode.jsonl")) {
    const std::string expected = row.contains("decoded") ? row["decoded"].get<std::string>()
                                                         : tok::RepairUtf8(RowBytes(row));
    EXPECT_EQ(t->tokenizer.Decode(row["ids"].get<std::vector<int32_t>>()), expected);
  }
}

// No normaliser: Decode(Encode(s)) gives back s (ill-formed input as its U+FFFD repair), less the
// bytes the vocabulary has no token for, which the BPE drops.
TEST(GgufTokenizerTest, SmolLM2RoundTripsEveryTextLessBytesWithoutAToken) {
  DV_REQUIRE_SMOLLM2_TOKENIZER(t);
  std::string tokenless;
  for (unsigned b = 0; b < 256; ++b) {
    std::string spelled;
    tok::AppendUtf8(tok::ByteToUnicode(static_cast<uint8_t>(b)), spelled);
    if (t->tokenizer.TokenId(spelled) < 0) tokenless.push_back(static_cast<char>(b));
  }
  EXPECT_EQ(tokenless.size(), 21u);  // 0x04 0x06 0x13 0x14 0x16 0x1d, 0xc0 0xc1, 0xf1..0xff
  int mismatches = 0;
  for (const auto& row : ReadJsonl("smollm2_encode.jsonl")) {
    std::string expected = tok::RepairUtf8(RowBytes(row));
    std::erase_if(expected, [&](char c) { return tokenless.find(c) != std::string::npos; });
    expected = tok::RepairUtf8(expected);  // a dropped lead byte leaves its continuation bytes
    if (t->tokenizer.Decode(t->tokenizer.Encode(RowBytes(row))) != expected &&
        ++mismatches <= kMaxPrintedMismatches) {
      ADD_FAILURE() << nlohmann::json(expected).dump();
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(GgufTokenizerTest, SmolLM2ChatPromptsEncodeLikeHuggingFace) {
  DV_REQUIRE_SMOLLM2_TOKENIZER(t);
  const tok::ChatTemplate& chat = RequireChatTemplate(*t, *SmolLM2File());
  for (const auto& row : ReadJsonl("smollm2_chat.jsonl")) {
    std::vector<tok::ChatMessage> messages;
    for (const auto& m : row["messages"]) {
      messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>(), {}});
    }
    const std::string text = chat.Render(messages, row["add_generation_prompt"].get<bool>());
    EXPECT_EQ(text, row["text"].get<std::string>());
    EXPECT_EQ(t->tokenizer.Encode(text), row["ids"].get<std::vector<int32_t>>());
  }
}

// ---------------------------------------------------------------------------------------------
// Crafted files: a byte-level vocabulary of the 256 byte tokens plus "Ġt" and two added tokens.

struct Vocab {
  std::string model = "gpt2";
  std::string pre = "smollm";
  std::vector<std::string> extra = {"Ġt", "<|s|>", "<|u|>"};
  std::vector<int32_t> extra_types = {1, 3, 4};
  std::vector<std::string> merges = {"Ġ t"};
  bool short_types = false;
  std::string chat_template;
};

GgufFile Open(const Vocab& v, std::vector<uint8_t>& storage) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (unsigned b = 0; b < 256; ++b) {
    std::string token;
    tok::AppendUtf8(tok::ByteToUnicode(static_cast<uint8_t>(b)), token);
    tokens.push_back(token);
    types.push_back(1);
  }
  tokens.insert(tokens.end(), v.extra.begin(), v.extra.end());
  types.insert(types.end(), v.extra_types.begin(), v.extra_types.end());
  if (v.short_types) types.pop_back();
  GgufBuilder b;
  b.String("tokenizer.ggml.model", v.model)
      .String("tokenizer.ggml.pre", v.pre)
      .Strings("tokenizer.ggml.tokens", tokens)
      .I32s("tokenizer.ggml.token_type", types)
      .Strings("tokenizer.ggml.merges", v.merges)
      .U32("tokenizer.ggml.eos_token_id", 257);
  if (!v.chat_template.empty()) b.String("tokenizer.chat_template", v.chat_template);
  storage = b.Build();
  return GgufFile::FromBytes(storage, "vocab.gguf");
}

template <typename Change>
std::string TokenizerError(Change change) {
  Vocab v;
  change(v);
  std::vector<uint8_t> storage;
  try {
    LoadGgufTokenizer(Open(v, storage));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(GgufTokenizerTest, CraftedVocabularyLoads) {
  std::vector<uint8_t> storage;
  const GgufFile f = Open(Vocab(), storage);
  const GgufTokenizer t = LoadGgufTokenizer(f);
  EXPECT_EQ(t.tokenizer.VocabSize(), 259);
  EXPECT_EQ(t.eos_id, 257);
  EXPECT_EQ(t.bos_id, -1);
  EXPECT_TRUE(t.tokenizer.IsSpecial(257));
  EXPECT_FALSE(t.tokenizer.IsSpecial(258));
  EXPECT_EQ(t.tokenizer.TokenId("<|u|>"), 258);
  EXPECT_FALSE(t.chat.has_value());
  try {
    RequireChatTemplate(t, f);
    FAIL();
  } catch (const GgufError& e) {
    EXPECT_EQ(std::string(e.what()), "vocab.gguf: the file has no tokenizer.chat_template");
  }
}

// A USER_DEFINED token outside the byte alphabet is respelled into it and stays a plain vocabulary
// entry, as transformers' GGUF loader treats it.
TEST(GgufTokenizerTest, UserDefinedTokensOutsideTheAlphabetAreNotAdded) {
  Vocab v;
  v.extra.push_back("<\u2192>");
  v.extra_types.push_back(4);
  std::vector<uint8_t> storage;
  const GgufFile f = Open(v, storage);
  const GgufTokenizer t = LoadGgufTokenizer(f);
  EXPECT_EQ(t.tokenizer.TokenId(tok::BytesToByteLevel("<\u2192>")), 259);
  EXPECT_EQ(t.tokenizer.TokenId("<\u2192>"), -1);
  EXPECT_EQ(t.tokenizer.TokenBytes(259), "<\u2192>");
  const std::vector<int32_t> ids = t.tokenizer.Encode("<\u2192>");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 259), 0);
}

TEST(GgufTokenizerTest, UnsupportedOrInconsistentTokenizersAreOneLineErrors) {
  EXPECT_EQ(TokenizerError([](Vocab& v) { v.model = "llama"; }),
            "vocab.gguf: tokenizer.ggml.model \"llama\" is not supported (only \"gpt2\", "
            "byte-level BPE)");
  EXPECT_EQ(TokenizerError([](Vocab& v) { v.pre = "qwen2"; }),
            "vocab.gguf: tokenizer.ggml.pre \"qwen2\" is not supported (only \"smollm\"; each "
            "pre-tokenizer is checked against Hugging Face before it is accepted)");
  EXPECT_EQ(TokenizerError([](Vocab& v) { v.short_types = true; }),
            "vocab.gguf: tokenizer.ggml.token_type has 258 entries for 259 tokens");
  EXPECT_EQ(TokenizerError([](Vocab& v) { v.extra[2] = "Ġt"; }),
            "vocab.gguf: tokenizer.ggml.tokens has \"Ġt\" twice (ids 256 and 258)");
  EXPECT_EQ(TokenizerError([](Vocab& v) { v.merges = {"Ġt"}; }),
            "vocab.gguf: tokenizer.ggml.merges[0] is not two tokens separated by one space");
  EXPECT_EQ(TokenizerError([](Vocab& v) { v.merges = {"Ġ q"}; }),
            "vocab.gguf: model.merges[0] (Ġ q) uses a token missing from model.vocab");
  EXPECT_EQ(TokenizerError([](Vocab& v) { v.chat_template = "{{ messages }}"; }), "");
  Vocab v;
  v.chat_template = "{{ messages }}";
  std::vector<uint8_t> storage;
  const GgufFile f = Open(v, storage);
  const GgufTokenizer t = LoadGgufTokenizer(f);
  try {
    RequireChatTemplate(t, f);
    FAIL();
  } catch (const GgufError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("vocab.gguf: unsupported chat template (14 bytes", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace dv::gguf
