#include "harness/config_runner.h"

#include <sys/stat.h>

#include <chrono>

#include "engine/backends/backend_registry.h"
#include "engine/co_prompts.h"
#include "engine/generate.h"
#include "engine/model_source.h"
#include "harness/prompt_text.h"

namespace dv::harness {
namespace {

bool Exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::string BaseName(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

std::string ResolveScenarioPath(const Scenario& scenario, const std::string& path) {
  if (path.empty() || path.front() == '/' || Exists(path)) return path;
  const size_t slash = scenario.path.rfind('/');
  if (slash == std::string::npos) return path;
  const std::string beside = scenario.path.substr(0, slash + 1) + path;
  return Exists(beside) ? beside : path;
}

ResolvedModel ResolveModel(const Scenario& scenario) {
  ResolvedModel m;
  if (!scenario.model.artifact.empty()) {
    m.artifact_path = ResolveScenarioPath(scenario, scenario.model.artifact);
    if (Exists(m.artifact_path)) {
      m.artifact = Artifact::Load(m.artifact_path);
      m.source = "artifact:" + BaseName(m.artifact_path);
      return m;
    }
    if (scenario.model.fallback_preset.empty()) {
      throw ScenarioError(scenario.path + ": the artifact '" + scenario.model.artifact +
                          "' does not exist and the scenario has no fallback");
    }
    m.fallback_used = true;
  }
  m.artifact = LoadSynthetic(scenario.model.fallback_preset, scenario.model.fallback_seed);
  m.source = "synthetic:" + scenario.model.fallback_preset + " seed=" + std::to_string(scenario.model.fallback_seed);
  m.synthetic = true;
  return m;
}

std::vector<int32_t> ResolvePrompt(const Scenario& scenario, const Artifact& artifact) {
  std::vector<int32_t> ids = scenario.prompt.ids;
  if (ids.empty()) ids = TokenizePromptText(scenario, artifact);
  if (scenario.prompt.first_tokens > 0) {
    if (static_cast<int64_t>(ids.size()) < scenario.prompt.first_tokens) {
      throw ScenarioError(scenario.path + ": the prompt has " + std::to_string(ids.size()) +
                          " tokens, fewer than first_tokens " + std::to_string(scenario.prompt.first_tokens));
    }
    ids.resize(static_cast<size_t>(scenario.prompt.first_tokens));
  }
  if (!scenario.prompt.expect_ids.empty() && ids != scenario.prompt.expect_ids) {
    size_t i = 0;
    while (i < ids.size() && i < scenario.prompt.expect_ids.size() && ids[i] == scenario.prompt.expect_ids[i]) ++i;
    throw ScenarioError(scenario.path + ": the prompt tokenizes to ids that differ from prompt.expect_ids at index " +
                        std::to_string(i) + " (" + std::to_string(ids.size()) + " ids vs " +
                        std::to_string(scenario.prompt.expect_ids.size()) + " expected)");
  }
  const int64_t vocab = artifact.weights().config.vocab;
  for (int32_t id : ids) {
    if (id >= vocab) {
      throw ScenarioError(scenario.path + ": prompt token id " + std::to_string(id) +
                          " is outside the model's vocabulary (" + std::to_string(vocab) + ")");
    }
  }
  return ids;
}

ConfigOutcome RunConfigurationInProcess(const Scenario& scenario, const Configuration& config,
                                        const ResolvedModel& model,
                                        const std::function<void(int64_t, int64_t)>& progress) {
  const std::vector<int32_t> prompt = ResolvePrompt(scenario, *model.artifact);
  std::vector<std::vector<int32_t>> co;
  if (config.batch.size > 1) {
    CoPromptSpec spec = scenario.co_prompts;
    spec.count = config.batch.size - 1;
    co = MakeCoPrompts(spec, model.artifact->weights().config.vocab);
  }
  const auto rows = ComposeBatch(prompt, co, config.batch.position);
  BackendOptions bo;
  bo.threads = config.threads;
  auto backend = MakeBackend(config.backend, bo);
  IntQwen3 int_model(model.artifact->weights(), *backend);
  GenerationOptions go;
  go.max_new = scenario.max_new;
  go.split = config.split_prefill;
  const auto ours = static_cast<size_t>(config.batch.position);
  const auto t0 = std::chrono::steady_clock::now();
  const auto results = GenerateGreedy(int_model, rows, go, [&](size_t row, int64_t step, int64_t total) {
    if (row == ours && progress) progress(step + 1, total);
  });
  ConfigOutcome out;
  out.generate_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  out.wrap_events = int_model.wrap_events();
  const RowResult& r = results[ours];
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    out.steps.push_back({r.tokens[i], r.logits_chain[i], r.token_chain[i]});
  }
  return out;
}

}  // namespace dv::harness
