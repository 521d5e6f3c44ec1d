// The parent's half of a run: each configuration of a scenario resolved once, into a RunPlan
// (plan/run_plan.h). The model is loaded and hashed here, the prompt tokenized here, the
// co-prompts drawn here, the backend's SIMD level and thread count chosen here; the child gets
// the plan and re-decides nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/float_checkpoint.h"
#include "db/records.h"
#include "engine/artifact.h"
#include "harness/scenario.h"
#include "plan/run_plan.h"

namespace dv::harness {

// The models a scenario runs on. The int side: its artifact when present, else its synthetic
// fallback; absent (its rows skipped with `int_missing`) when it has neither. The float side,
// resolved only when float rows are selected: its Hugging Face checkpoint when present, else the
// synthetic checkpoint of the fallback preset (`synth --format hf`, cached and checked); absent
// (its rows skipped with `float_missing`) when it has neither.
struct ResolvedModel {
  std::unique_ptr<Artifact> artifact;  // null when the int side is absent
  std::string source;  // "artifact:<dir name>", "synthetic:<preset> seed=<n>", "prepared:..."
  bool synthetic = false;
  bool fallback_used = false;  // the artifact was named but absent
  std::string artifact_path;   // the path that was looked for (may be empty)
  std::string int_missing;     // why int8 rows cannot run ("" when artifact is set)

  std::unique_ptr<FloatCheckpoint> checkpoint;  // null when the float side is absent
  std::string
      float_source;  // "hf:<dir name>", "gguf:<file name>", "synthetic-hf:<preset> seed=<n>"
  bool float_synthetic = false;
  bool float_gguf = false;           // the checkpoint is a GGUF file (model.gguf)
  bool float_fallback_used = false;  // the checkpoint was named but absent
  std::string checkpoint_dir;        // the folder read, or the GGUF file (absolute)
  std::string checkpoint_sha256, checkpoint_config_sha256;
  std::string float_missing;  // why float rows cannot run ("" when checkpoint is set)

  // The DB row of the model `engine` rows run; a side that is absent borrows the other's (its
  // rows are skipped, and a run row must name an artifact).
  db::ArtifactRecord Record(EngineKind engine) const;
  int64_t Vocab(EngineKind engine) const;  // the vocabulary `engine` rows run with
  // The folder whose tokenizer.json encodes text prompts: the artifact's, else the checkpoint's.
  std::string TokenizerDir() const;
};

// The prompt's token ids and what produced them.
struct ResolvedPrompt {
  std::vector<int32_t> ids;
  std::string tokenizer_sha256;  // "" for a prompt given as ids
  std::string tokenizer_path;    // the tokenizer file used ("" for a prompt given as ids)
};

// Relative paths are looked up in the current directory, then beside the scenario file.
std::string ResolveScenarioPath(const Scenario& scenario, const std::string& path);

// `with_float`: resolve the float side too (some float rows are selected). Throws ScenarioError /
// ArtifactError when no selected row has a model.
ResolvedModel ResolveModel(const Scenario& scenario, bool with_float = false);

// The prompt's token ids (ids as given, or the text tokenized), cut to first_tokens, checked
// against expect_ids and the model's vocabulary. Throws ScenarioError.
std::vector<int32_t> ResolvePrompt(const Scenario& scenario, const ResolvedModel& model);
ResolvedPrompt ResolvePromptWithTokenizer(const Scenario& scenario, const ResolvedModel& model);
// The scenario's values that depend on the model, once its prompt is known: prompt + max_new
// within the positions of every model the rows use, every split.prefill within the prompt,
// co_prompts.vocab within the vocabulary and batched co-prompts within the positions. Throws
// ScenarioError "path:line: ...". ResolvePromptWithTokenizer calls it.
void CheckAgainstModel(const Scenario& scenario, const ResolvedModel& model,
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
