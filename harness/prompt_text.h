// Text prompts: tokenizes prompt.text / prompt.text_file (optionally through a chat template)
// with the model's tokenizer (gguf/model_tokenizer.h: an artifact's tokenizer.gguf or
// tokenizer.json, a GGUF model's own, else the default Qwen3 tokenizer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/scenario.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace dv::harness {

// The tokenizer file a prompt is encoded with: the one in `model_dir` (the int artifact's or the
// checkpoint's folder: tokenizer.gguf, else tokenizer.json), else the default Qwen3 one.
std::string PromptTokenizerPath(const std::string& model_dir);

// Throws ScenarioError naming the file when the text or a tokenizer cannot be read.
// `tokenizer_path` is a tokenizer.json or a GGUF; prompt.chat renders that GGUF's chat
// template, or Qwen3's for a tokenizer.json.
std::vector<int32_t> TokenizePromptText(const Scenario& scenario,
                                        const std::string& tokenizer_path);
// The same with a tokenizer and chat template given.
std::vector<int32_t> TokenizePromptText(const Scenario& scenario, const tok::Tokenizer& tokenizer,
                                        const tok::ChatTemplate& chat);

}  // namespace dv::harness
