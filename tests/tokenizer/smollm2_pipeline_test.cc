// SmolLM2's tokenizer pipeline without its vocabulary: the Digits + GPT-2 pre-tokenizer (and the
// bare GPT-2 split) against Hugging Face's pre_tokenize_str, and the chat template against
// transformers' apply_chat_template, via the fixtures of scripts/tokenizer/make_smollm2_fixture.py.
#include <gtest/gtest.h>

#include "tests/tokenizer/qwen3_test_data.h"
#include "tests/tokenizer/synthetic_tokenizer_json.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace dv::tok {
namespace {

using testing::Printable;
using testing::ReadJsonl;

constexpr int kMaxPrintedMismatches = 5;

// The pieces in byte-level spelling, as pre_tokenize_str prints them.
std::vector<std::string> Pieces(PreTokenizer kind, const std::string& text) {
  std::vector<std::string_view> pieces;
  SplitPretokens(kind, text, pieces);
  std::vector<std::string> out;
  for (std::string_view p : pieces) out.push_back(BytesToByteLevel(p));
  return out;
}

TEST(TokenizerSmolLM2PipelineTest, PreTokenizersMatchHuggingFace) {
  const auto rows = ReadJsonl("smollm2_pretokenize.jsonl");
  ASSERT_GE(rows.size(), 500u);
  for (const auto& [key, kind] : {std::pair{"digits_gpt2", PreTokenizer::kDigitsGpt2},
                                  std::pair{"gpt2", PreTokenizer::kGpt2}}) {
    int mismatches = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string text = rows[i]["text"].get<std::string>();
      const auto expected = rows[i][key].get<std::vector<std::string>>();
      if (Pieces(kind, text) != expected && ++mismatches <= kMaxPrintedMismatches) {
        ADD_FAILURE() << key << " case " << i << " text " << Printable(text, 200) << "\n  expected "
                      << Printable(nlohmann::json(expected).dump(), 300) << "\n  actual   "
                      << Printable(nlohmann::json(Pieces(kind, text)).dump(), 300);
      }
    }
    EXPECT_EQ(mismatches, 0) << key << ", of " << rows.size() << " cases";
  }
}

TEST(TokenizerSmolLM2PipelineTest, DigitsAreIsolatedBeforeTheGpt2Split) {
  // The case where the two pipelines differ: a space run before a digit stays one piece.
  EXPECT_EQ(Pieces(PreTokenizer::kDigitsGpt2, "a  1"), (std::vector<std::string>{"a", "ĠĠ", "1"}));
  EXPECT_EQ(Pieces(PreTokenizer::kGpt2, "a  1"), (std::vector<std::string>{"a", "Ġ", "Ġ1"}));
  EXPECT_STREQ(PreTokenizerName(PreTokenizer::kDigitsGpt2), "digits+gpt2");
}

std::vector<ChatMessage> Messages(const nlohmann::json& row) {
  std::vector<ChatMessage> messages;
  for (const auto& m : row["messages"]) {
    messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>(), {}});
  }
  return messages;
}

TEST(TokenizerSmolLM2PipelineTest, ChatTemplateRendersLikeTransformers) {
  const auto rows = ReadJsonl("smollm2_chat.jsonl");
  ASSERT_GE(rows.size(), 40u);
  const ChatTemplate chat = ChatTemplate::FromJinja(kSmolLM2ChatTemplate, "test");
  EXPECT_EQ(chat.kind(), ChatTemplate::Kind::kSmolLM2);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(chat.Render(Messages(rows[i]), rows[i]["add_generation_prompt"].get<bool>()),
              rows[i]["text"].get<std::string>())
        << "case " << i << " messages " << Printable(rows[i]["messages"].dump(), 400);
  }
}

TEST(TokenizerSmolLM2PipelineTest, UnknownChatTemplatesAreRefused) {
  const std::string other = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}";
  try {
    ChatTemplate::FromJinja(other, "model.gguf");
    FAIL() << "accepted";
  } catch (const TokenizerError& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.gguf: unsupported chat template (" + std::to_string(other.size()) +
                  " bytes starting \"" + other.substr(0, 60) +
                  "\"); only SmolLM2-Instruct's is recognised, Qwen3's is built in");
  }
  // One byte off is another template.
  std::string almost(kSmolLM2ChatTemplate);
  almost.back() = ' ';
  EXPECT_THROW(ChatTemplate::FromJinja(almost, "x"), TokenizerError);
  EXPECT_EQ(ChatTemplate::Qwen3().Render({{"user", "Hi", {}}}, true),
            RenderQwen3Chat({{"user", "Hi", {}}}, true, false));
}

// tokenizer.json in SmolLM2's spelling loads with the Digits pipeline; a bare GPT-2 ByteLevel is
// still refused (tokenizer_errors_test.cc).
TEST(TokenizerSmolLM2PipelineTest, TokenizerJsonWithDigitsThenByteLevelLoads) {
  nlohmann::json doc = testing::SyntheticTokenizerJson({}, nlohmann::json::array());
  doc["normalizer"] = nullptr;
  const nlohmann::json byte_level = {{"type", "ByteLevel"},
                                     {"add_prefix_space", false},
                                     {"trim_offsets", true},
                                     {"use_regex", true}};
  doc["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level}}};
  doc["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  const Tokenizer tok = Tokenizer::FromJson(doc.dump(), "smollm2-style.json");
  EXPECT_EQ(tok.pre_tokenizer(), PreTokenizer::kDigitsGpt2);
  EXPECT_EQ(tok.Encode("a 12"), (std::vector<int32_t>{'a', ' ', '1', '2'}));
  doc["pre_tokenizer"]["pretokenizers"][0]["individual_digits"] = false;
  EXPECT_THROW(Tokenizer::FromJson(doc.dump(), "x"), TokenizerError);
}

}  // namespace
}  // namespace dv::tok
