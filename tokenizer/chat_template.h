#pragma once
// Chat templates written out in C++ so that prompts need no Jinja engine: Qwen3's
// (tokenizer_config.json "chat_template", conversations without tools) and SmolLM2-Instruct's
// (the GGUF's tokenizer.chat_template). A model's own template is accepted only when it is exactly
// one of these (ChatTemplate::FromJinja); any other is refused rather than rendered differently.
#include <optional>
#include <string>
#include <string_view>
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

// SmolLM2-Instruct's Jinja template, byte for byte (SmolLM2-135M/360M/1.7B-Instruct).
inline constexpr std::string_view kSmolLM2ChatTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

// What kSmolLM2ChatTemplate renders, byte-identical to transformers' apply_chat_template: ChatML
// turns "<|im_start|>{role}\n{content}<|im_end|>\n" for every message, whatever its role (the
// template does not check roles, and neither does this), preceded by SmolLM2's default system turn
// when the first message is not a system one; then "<|im_start|>assistant\n" with
// add_generation_prompt. reasoning_content is ignored, as the template ignores it.
std::string RenderSmolLM2Chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt);

// One of the built-in templates, chosen by name or recognised from a model's Jinja source.
class ChatTemplate {
 public:
  enum class Kind { kQwen3, kSmolLM2 };

  static ChatTemplate Qwen3() { return ChatTemplate(Kind::kQwen3); }
  static ChatTemplate SmolLM2() { return ChatTemplate(Kind::kSmolLM2); }
  // The built-in template whose Jinja source is exactly `jinja`. Throws TokenizerError
  // ("<source>: unsupported chat template ...") for any other.
  static ChatTemplate FromJinja(std::string_view jinja, const std::string& source);

  Kind kind() const { return kind_; }
  const char* name() const;  // "qwen3", "smollm2"
  // RenderQwen3Chat or RenderSmolLM2Chat (which has no thinking switch).
  std::string Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                     bool enable_thinking = false) const;

 private:
  explicit ChatTemplate(Kind kind) : kind_(kind) {}
  Kind kind_;
};

}  // namespace dv::tok
