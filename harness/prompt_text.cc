#include "harness/prompt_text.h"

namespace dv::harness {

std::vector<int32_t> TokenizePromptText(const Scenario& scenario, const Artifact& artifact) {
  (void)artifact;
  throw ScenarioError(scenario.path + ": prompt.text needs the tokenizer module, which this build lacks; give prompt.ids");
}

}  // namespace dv::harness
