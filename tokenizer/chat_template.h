#pragma once
// Qwen3's chat template (tokenizer_config.json "chat_template") for conversations without tools,
// written out in C++ so that prompts need no Jinja engine.
#include <optional>
#include <string>
#include <vector>

namespace dv::tok {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  // An assistant turn's thinking; if absent it is taken from "<think>...</think>" in `content`.
  std::optional<std::string> reasoning_content;
};

// The text the official template renders for `messages` (tools=None): byte-identical to
// transformers' apply_chat_template(messages, tokenize=False, add_generation_prompt=...,
// enable_thinking=...). Thinking of assistant turns after the last user query is kept, earlier
// thinking is dropped. With add_generation_prompt and !enable_thinking the prompt ends in an empty
// think block. Throws TokenizerError for an empty conversation or a role not listed above (the
// template would silently drop such a turn).
std::string RenderQwen3Chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                            bool enable_thinking);

}  // namespace dv::tok
