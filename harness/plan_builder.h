// The parent's half of a run: each configuration of a scenario resolved once, into a RunPlan
// (plan/run_plan.h). The model is loaded and hashed here, the prompt tokenized here, the
// co-prompts drawn here, the backend's SIMD level and thread count chosen here; the child gets
// the plan and re-decides nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/artifact.h"
#include "harness/scenario.h"
#include "plan/run_plan.h"

namespace dv::harness {

// The model a scenario runs on: its artifact when present, else its synthetic fallback.
struct ResolvedModel {
  std::unique_ptr<Artifact> artifact;
  std::string source;  // "artifact:<dir name>" or "synthetic:<preset> seed=<n>"
  bool synthetic = false;
  bool fallback_used = false;  // the artifact was named but absent
  std::string artifact_path;   // the path that was looked for (may be empty)
};

// The prompt's token ids and what produced them.
struct ResolvedPrompt {
  std::vector<int32_t> ids;
  std::string tokenizer_sha256;  // "" for a prompt given as ids
};

// Relative paths are looked up in the current directory, then beside the scenario file.
std::string ResolveScenarioPath(const Scenario& scenario, const std::string& path);

// Throws ScenarioError / ArtifactError when neither the artifact nor a fallback is usable.
ResolvedModel ResolveModel(const Scenario& scenario);

// The prompt's token ids (ids as given, or the text tokenized), cut to first_tokens, checked
// against expect_ids and the model's vocabulary. Throws ScenarioError.
std::vector<int32_t> ResolvePrompt(const Scenario& scenario, const Artifact& artifact);
ResolvedPrompt ResolvePromptWithTokenizer(const Scenario& scenario, const Artifact& artifact);
// The scenario's values that depend on the model, once its prompt is known: prompt + max_new
// within the model's positions, every split.prefill within the prompt, co_prompts.vocab within the
// vocabulary and batched co-prompts within the positions. Throws ScenarioError "path:line: ...".
// ResolvePromptWithTokenizer calls it.
void CheckAgainstModel(const Scenario& scenario, const Artifact& artifact,
                       const std::vector<int32_t>& prompt);

// One configuration, planned. A configuration that cannot run here carries its reason: skipped
// (a backend, engine or emulator this machine or build lacks) or an error (a backend request
// this CPU refuses, such as a DETVERIFY_CPU_ISA it lacks); its plan is still filled as far as
// it can be, and is what the run row records.
struct PlannedRun {
  plan::RunPlan plan;
  std::string skip_reason;
  std::string error;
};

PlannedRun PlanConfiguration(const Scenario& scenario, const std::string& scenario_id,
                             const Configuration& config, const ResolvedModel& model,
                             const ResolvedPrompt& prompt);

}  // namespace dv::harness
