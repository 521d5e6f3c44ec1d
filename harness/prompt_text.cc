#include "harness/prompt_text.h"

#include <sys/stat.h>

#include "base/file_io.h"
#include "harness/plan_builder.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace dv::harness {
namespace {

constexpr size_t kMaxPromptTextBytes = 64 * kMiB;

}  // namespace

std::string PromptTokenizerPath(const std::string& model_dir) {
  const std::string own = model_dir + "/tokenizer.json";
  struct stat st {};
  if (::stat(own.c_str(), &st) == 0) return own;
  return tok::DefaultTokenizerPath();
}

std::vector<int32_t> TokenizePromptText(const Scenario& scenario, const std::string& model_dir) {
  std::string text = scenario.prompt.text;
  if (!scenario.prompt.text_file.empty()) {
    const std::string path = ResolveScenarioPath(scenario, scenario.prompt.text_file);
    std::string why;
    if (!ReadFileBounded(path, kMaxPromptTextBytes, text, why)) {
      throw ScenarioError(scenario.path + ": cannot read prompt.text_file '" + path + "': " + why);
    }
  }
  if (scenario.prompt.chat) {
    text = tok::RenderQwen3Chat({{"user", text, std::nullopt}}, /*add_generation_prompt=*/true,
                                /*enable_thinking=*/false);
  }
  std::vector<int32_t> ids;
  try {
    ids = tok::Tokenizer::FromFile(PromptTokenizerPath(model_dir)).Encode(text);
  } catch (const tok::TokenizerError& e) {
    throw ScenarioError(scenario.path + ": cannot tokenize the prompt: " + e.what());
  }
  return ids;
}

}  // namespace dv::harness
