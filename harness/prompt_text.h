// Text prompts: tokenizes prompt.text / prompt.text_file (optionally through the Qwen3 chat
// template) with the model folder's tokenizer.json, else the default Qwen3 tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/scenario.h"

namespace dv::harness {

// The tokenizer.json a prompt is encoded with: the one in `model_dir` (the int artifact's or the
// checkpoint's folder), else the default Qwen3 one.
std::string PromptTokenizerPath(const std::string& model_dir);

// Throws ScenarioError naming the file when the text or a tokenizer cannot be read.
std::vector<int32_t> TokenizePromptText(const Scenario& scenario, const std::string& model_dir);

}  // namespace dv::harness
