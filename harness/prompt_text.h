// Text prompts: tokenizes prompt.text / prompt.text_file (optionally through the Qwen3 chat
// template) with the artifact's tokenizer.json, else the default Qwen3 tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/artifact.h"
#include "harness/scenario.h"

namespace dv::harness {

// The tokenizer.json a prompt is encoded with: the artifact's own, else the default Qwen3 one.
std::string PromptTokenizerPath(const Artifact& artifact);

// Throws ScenarioError naming the file when the text or a tokenizer cannot be read.
std::vector<int32_t> TokenizePromptText(const Scenario& scenario, const Artifact& artifact);

}  // namespace dv::harness
