// Runs one configuration of a scenario in this process: resolve the model, build the batch,
// generate greedily and collect every step's chain hashes. The parent runner calls this through
// a child process (`detverify run-config`), so a crash or hang costs only that configuration.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/artifact.h"
#include "harness/scenario.h"

namespace dv::harness {

// The model a scenario runs on: its artifact when present, else its synthetic fallback.
struct ResolvedModel {
  std::unique_ptr<Artifact> artifact;
  std::string source;        // "artifact:<dir name>" or "synthetic:<preset> seed=<n>"
  bool synthetic = false;
  bool fallback_used = false;  // the artifact was named but absent
  std::string artifact_path;   // the path that was looked for (may be empty)
};

// Relative paths are looked up in the current directory, then beside the scenario file.
std::string ResolveScenarioPath(const Scenario& scenario, const std::string& path);

// Throws ScenarioError / ArtifactError when neither the artifact nor a fallback is usable.
ResolvedModel ResolveModel(const Scenario& scenario);

// The prompt's token ids (ids as given, or the text tokenized), cut to first_tokens.
std::vector<int32_t> ResolvePrompt(const Scenario& scenario, const Artifact& artifact);

struct StepHashes {
  int32_t token = 0;
  std::string logits_chain, token_chain;  // 64 hex each
};

struct ConfigOutcome {
  std::vector<StepHashes> steps;
  int64_t generate_ms = 0;  // generation only, without model loading
  int64_t wrap_events = 0;
};

// progress(step_done, total) after each step of our row.
ConfigOutcome RunConfigurationInProcess(const Scenario& scenario, const Configuration& config,
                                        const ResolvedModel& model,
                                        const std::function<void(int64_t, int64_t)>& progress);

}  // namespace dv::harness
