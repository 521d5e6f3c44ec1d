#include "tokenizer/chat_template.h"

#include <string_view>

#include "tokenizer/tokenizer_error.h"

namespace dv::tok {
namespace {

// Python's str.lstrip / rstrip / strip with the argument "\n", as the template calls them.
std::string_view LstripNewlines(std::string_view s) {
  const size_t first = s.find_first_not_of('\n');
  return first == std::string_view::npos ? std::string_view() : s.substr(first);
}

std::string_view RstripNewlines(std::string_view s) {
  const size_t last = s.find_last_not_of('\n');
  return last == std::string_view::npos ? std::string_view() : s.substr(0, last + 1);
}

std::string_view StripNewlines(std::string_view s) { return RstripNewlines(LstripNewlines(s)); }

// Python's s.split(sep)[0] and s.split(sep)[-1].
std::string_view BeforeFirst(std::string_view s, std::string_view sep) {
  const size_t at = s.find(sep);
  return at == std::string_view::npos ? s : s.substr(0, at);
}

std::string_view AfterLast(std::string_view s, std::string_view sep) {
  const size_t at = s.rfind(sep);
  return at == std::string_view::npos ? s : s.substr(at + sep.size());
}

bool IsToolResponse(std::string_view content) {
  return content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
}

}  // namespace

std::string RenderQwen3Chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                            bool enable_thinking) {
  if (messages.empty()) throw TokenizerError("chat template: the conversation has no messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      throw TokenizerError("chat template: message " + std::to_string(i) + " has unknown role \"" +
                           role + "\"");
    }
  }

  std::string out;
  if (messages[0].role == "system") {
    out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
  }
  // The last user turn that is a real query (not a wrapped tool response); thinking is shown only
  // for assistant turns after it.
  size_t last_query = messages.size() - 1;
  for (size_t k = messages.size(); k-- > 0;) {
    if (messages[k].role == "user" && !IsToolResponse(messages[k].content)) {
      last_query = k;
      break;
    }
  }

  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const bool last = i + 1 == messages.size();
    if (m.role == "user" || (m.role == "system" && i > 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      std::string_view content = m.content;
      std::string_view reasoning;
      if (m.reasoning_content.has_value()) {
        reasoning = *m.reasoning_content;
      } else if (content.find("</think>") != std::string_view::npos) {
        const std::string_view full = m.content;
        content = LstripNewlines(AfterLast(full, "</think>"));
        reasoning =
            LstripNewlines(AfterLast(RstripNewlines(BeforeFirst(full, "</think>")), "<think>"));
      }
      out += "<|im_start|>assistant\n";
      if (i > last_query && (last || !reasoning.empty())) {
        out += "<think>\n";
        out += StripNewlines(reasoning);
        out += "\n</think>\n\n";
        out += LstripNewlines(content);
      } else {
        out += content;
      }
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (last || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

std::string RenderSmolLM2Chat(const std::vector<ChatMessage>& messages,
                              bool add_generation_prompt) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 0 && messages[0].role != "system") {
      out +=
          "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
          "Face<|im_end|>\n";
    }
    out += "<|im_start|>" + messages[i].role + "\n" + messages[i].content + "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

ChatTemplate ChatTemplate::FromJinja(std::string_view jinja, const std::string& source) {
  if (jinja == kSmolLM2ChatTemplate) return SmolLM2();
  std::string start(jinja.substr(0, 60));
  for (char& c : start) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  throw TokenizerError(source + ": unsupported chat template (" + std::to_string(jinja.size()) +
                       " bytes starting \"" + start +
                       "\"); only SmolLM2-Instruct's is recognised, Qwen3's is built in");
}

const char* ChatTemplate::name() const { return kind_ == Kind::kQwen3 ? "qwen3" : "smollm2"; }

std::string ChatTemplate::Render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt, bool enable_thinking) const {
  if (kind_ == Kind::kQwen3)
    return RenderQwen3Chat(messages, add_generation_prompt, enable_thinking);
  return RenderSmolLM2Chat(messages, add_generation_prompt);
}

}  // namespace dv::tok
