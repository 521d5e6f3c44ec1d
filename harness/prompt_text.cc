#include "harness/prompt_text.h"

#include "base/file_io.h"
#include "gguf/model_tokenizer.h"
#include "harness/plan_builder.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace dv::harness {
namespace {

constexpr size_t kMaxPromptTextBytes = 64 * kMiB;

}  // namespace

std::string PromptTokenizerPath(const std::string& model_dir) {
  return gguf::TokenizerPathFor(model_dir);
}

std::vector<int32_t> TokenizePromptText(const Scenario& scenario,
                                        const std::string& tokenizer_path) {
  try {
    const gguf::ModelTokenizer t = gguf::LoadModelTokenizer(tokenizer_path);
    return TokenizePromptText(scenario, t.tokenizer,
                              scenario.prompt.chat ? t.Chat() : tok::ChatTemplate::Qwen3());
  } catch (const ExpectedError& e) {
    throw ScenarioError(scenario.path + ": cannot tokenize the prompt: " + e.what());
  }
}

std::vector<int32_t> TokenizePromptText(const Scenario& scenario, const tok::Tokenizer& tokenizer,
                                        const tok::ChatTemplate& chat) {
  std::string text = scenario.prompt.text;
  if (!scenario.prompt.text_file.empty()) {
    const std::string path = ResolveScenarioPath(scenario, scenario.prompt.text_file);
    std::string why;
    if (!ReadFileBounded(path, kMaxPromptTextBytes, text, why)) {
      throw ScenarioError(scenario.path + ": cannot read prompt.text_file '" + path + "': " + why);
    }
  }
  if (scenario.prompt.chat) {
    text = chat.Render({{"user", text, std::nullopt}}, /*add_generation_prompt=*/true,
                       /*enable_thinking=*/false);
  }
  try {
    return tokenizer.Encode(text);
  } catch (const tok::TokenizerError& e) {
    throw ScenarioError(scenario.path + ": cannot tokenize the prompt: " + e.what());
  }
}

}  // namespace dv::harness
