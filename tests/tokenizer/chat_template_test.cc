// RenderQwen3Chat against transformers' apply_chat_template, via the fixture written by
// scripts/tokenizer/make_chat_fixture.py.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include "tests/tokenizer/qwen3_test_data.h"
#include "tokenizer/tokenizer.h"

namespace dv::tok {
namespace {

using testing::Printable;
using testing::ReadJsonl;

std::vector<ChatMessage> Messages(const nlohmann::json& row) {
  std::vector<ChatMessage> messages;
  for (const auto& m : row["messages"]) {
    ChatMessage message{m["role"].get<std::string>(), m["content"].get<std::string>(), {}};
    if (m.contains("reasoning_content")) {
      message.reasoning_content = m["reasoning_content"].get<std::string>();
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

TEST(TokenizerChatTemplateTest, RendersLikeTheOfficialJinjaTemplate) {
  const auto rows = ReadJsonl("qwen3_chat.jsonl");
  ASSERT_GE(rows.size(), 40u);
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string rendered =
        RenderQwen3Chat(Messages(rows[i]), rows[i]["add_generation_prompt"].get<bool>(),
                        rows[i]["enable_thinking"].get<bool>());
    EXPECT_EQ(rendered, rows[i]["text"].get<std::string>())
        << "case " << i << " messages " << Printable(rows[i]["messages"].dump(), 400);
  }
}

TEST(TokenizerChatTemplateTest, RenderedPromptsEncodeLikeHuggingFace) {
  const Tokenizer* tok = testing::Qwen3TokenizerOrNull();
  if (tok == nullptr) GTEST_SKIP() << "no Qwen3 tokenizer.json at " << DefaultTokenizerPath();
  for (const auto& row : ReadJsonl("qwen3_chat.jsonl")) {
    EXPECT_EQ(tok->Encode(row["text"].get<std::string>()), row["ids"].get<std::vector<int32_t>>())
        << Printable(row["text"].get<std::string>());
  }
}

TEST(TokenizerChatTemplateTest, GenerationPromptWithAndWithoutThinking) {
  const std::vector<ChatMessage> chat = {{"user", "Hi", {}}};
  EXPECT_EQ(RenderQwen3Chat(chat, true, true),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(RenderQwen3Chat(chat, true, false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(RenderQwen3Chat(chat, false, false), "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(TokenizerChatTemplateTest, RejectsEmptyChatsAndUnknownRoles) {
  EXPECT_THROW(RenderQwen3Chat({}, true, true), TokenizerError);
  try {
    RenderQwen3Chat({{"user", "a", {}}, {"narrator", "b", {}}}, true, true);
    FAIL() << "rendered an unknown role";
  } catch (const TokenizerError& e) {
    EXPECT_STREQ(e.what(), "chat template: message 1 has unknown role \"narrator\"");
  }
}

}  // namespace
}  // namespace dv::tok
