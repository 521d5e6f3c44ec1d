#include "harness/plan_builder.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "base/file_io.h"
#include "base/sha256.h"
#include "build_info.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_synth.h"
#include "engine/backends/backend_registry.h"
#include "engine/co_prompts.h"
#include "engine/model_source.h"
#include "gguf/gguf_checkpoint.h"
#include "gguf/model_cache.h"
#include "harness/emulated_platform.h"
#include "harness/prepared_model.h"
#include "harness/prompt_text.h"
#include "prepare/prepared_synthetic.h"

namespace dv::harness {
namespace {

std::string BaseName(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Why a configuration is not run on this machine/build with these models, or "" when it can run.
std::string SkipReason(const Configuration& c, const ResolvedModel& m) {
  if (c.engine == EngineKind::kFloat) {
    if (c.backend == BackendKind::kCuda) {
#ifdef DV_HARNESS_FLOAT_CUDA
      if (c.dtype != FloatDType::kFp16) {
        return "the float engine on cuda runs fp16 (cuBLAS), not " + std::string(KindName(c.dtype));
      }
      if (!BackendAvailable(BackendKind::kCuda)) return BackendAbsence(BackendKind::kCuda);
#else
      return "this build has no float engine on cuda (built without DETVERIFY_CUDA)";
#endif
    } else if (c.backend != BackendKind::kCpu) {
      return "the float engine runs on cpu or cuda, not " + std::string(KindName(c.backend));
    }
    if (!c.platform.empty()) return "float rows run on this machine only, not emulated";
    if (!m.checkpoint) return m.float_missing;
    return "";
  }
  if (!m.artifact) return m.int_missing;
  if (!BackendAvailable(c.backend)) return BackendAbsence(c.backend);
  if (!c.platform.empty()) return EmulationSkipReason(c.platform);
  return "";
}

plan::PlanModel PlanModelOf(const ResolvedModel& m, const Scenario& scenario, EngineKind engine) {
  plan::PlanModel out;
  if (engine == EngineKind::kFloat) {
    if (!m.checkpoint) return out;  // skipped: the plan records the engine, not a model
    out.source = m.float_gguf ? plan::ModelSource::kGguf : plan::ModelSource::kHfCheckpoint;
    out.path = m.checkpoint_dir;
    out.sha256 = m.checkpoint_sha256;
    out.config_sha256 = m.checkpoint_config_sha256;
    out.label = m.float_source;
    out.synthetic = m.float_synthetic;
    return out;
  }
  if (!m.artifact) return out;
  out.sha256 = m.artifact->sha256();
  out.config_sha256 = m.artifact->config_sha256();
  out.label = m.source;
  out.synthetic = m.synthetic;
  if (m.synthetic && scenario.model.fallback_kind == "synthetic") {
    out.source = plan::ModelSource::kSynthetic;
    out.preset = scenario.model.fallback_preset;
    out.seed = scenario.model.fallback_seed;
  } else {
    out.source = plan::ModelSource::kArtifact;
    out.path = std::filesystem::absolute(m.artifact_path).lexically_normal().string();
  }
  return out;
}

// The int side of ResolveModel.
void ResolveIntModel(const Scenario& scenario, ResolvedModel& m) {
  if (!scenario.model.artifact.empty()) {
    m.artifact_path = ResolveScenarioPath(scenario, scenario.model.artifact);
    if (PathExists(m.artifact_path)) {
      m.artifact = Artifact::Load(m.artifact_path);
      m.source = "artifact:" + BaseName(m.artifact_path);
      return;
    }
    if (scenario.model.fallback_preset.empty()) {
      m.int_missing = "the int artifact '" + scenario.model.artifact +
                      "' does not exist and the scenario has no fallback";
      return;
    }
    m.fallback_used = true;
  } else if (scenario.model.fallback_preset.empty()) {
    m.int_missing = "the scenario names no int artifact (model.artifact) for its int8 rows";
    return;
  }
  m.source = scenario.model.fallback_kind + ":" + scenario.model.fallback_preset +
             " seed=" + std::to_string(scenario.model.fallback_seed);
  m.synthetic = true;
  if (scenario.model.fallback_kind == "prepared") {
    // The fallback's synthetic float checkpoint (the float rows' model) prepared with the
    // built-in calibration, once, here; the children load the cached folder as an artifact.
    m.artifact = LoadPreparedSynthetic(
        scenario.model.fallback_preset, scenario.model.fallback_seed, [](const std::string& dir) {
          std::fprintf(stderr,
                       "detverify: preparing the built-in synthetic float checkpoint into %s "
                       "(once; a minute or two for qwen3-0.6b)\n",
                       dir.c_str());
        });
    m.artifact_path = m.artifact->dir();
    return;
  }
  m.artifact = LoadSynthetic(scenario.model.fallback_preset, scenario.model.fallback_seed);
}

// The float side of ResolveModel.
void ResolveFloatModel(const Scenario& scenario, ResolvedModel& m) {
  std::string dir;
  const bool gguf = !scenario.model.gguf.empty();
  const std::string& named = gguf ? scenario.model.gguf : scenario.model.hf;
  if (!named.empty()) {
    dir = ResolveScenarioPath(scenario, named);
    // A bare GGUF file name is also looked up among the installed models (gguf/model_cache.h).
    if (gguf && !PathExists(dir) && named.find('/') == std::string::npos &&
        PathExists(gguf::ModelCacheDir() + "/" + named)) {
      dir = gguf::ModelCacheDir() + "/" + named;
    }
    if (PathExists(dir) && gguf) {
      m.checkpoint = gguf::OpenGgufCheckpoint(dir, [&] {
        std::fprintf(stderr, "detverify: dequantizing %s to float32\n", dir.c_str());
      });
      m.float_source = "gguf:" + BaseName(dir);
      m.float_gguf = true;
    } else if (PathExists(dir)) {
      m.checkpoint = OpenHfCheckpoint(dir);
      m.float_source = "hf:" + BaseName(dir);
    } else if (scenario.model.fallback_preset.empty()) {
      m.float_missing = (gguf ? "the GGUF model '" : "the Hugging Face checkpoint '") + named +
                        "' does not exist and the scenario has no fallback";
      return;
    } else {
      m.float_fallback_used = true;
    }
  } else if (scenario.model.fallback_preset.empty()) {
    m.float_missing =
        "the scenario names no float model (model.hf or model.gguf) for its float rows";
    return;
  }
  if (!m.checkpoint) {
    m.checkpoint = OpenHfSynthetic(scenario.model.fallback_preset, scenario.model.fallback_seed,
                                   PrintHfSynthesisNotice);
    dir = HfSyntheticCacheDir(scenario.model.fallback_preset, scenario.model.fallback_seed);
    m.float_source = "synthetic-hf:" + scenario.model.fallback_preset +
                     " seed=" + std::to_string(scenario.model.fallback_seed);
    m.float_synthetic = true;
  }
  m.checkpoint_dir = std::filesystem::absolute(dir).lexically_normal().string();
  m.checkpoint_sha256 = m.checkpoint->ContentSha256();
  // A GGUF holds its config in the file: the file's digest stands for both.
  m.checkpoint_config_sha256 =
      m.float_gguf ? m.checkpoint_sha256 : Sha256FileHex(m.checkpoint_dir + "/config.json");
}

// model.prepare: the float model prepared with the scenario's calibration (cached).
void ResolvePreparedIntModel(const Scenario& scenario, ResolvedModel& m) {
  if (!m.checkpoint) {
    m.int_missing = "model.prepare has no float model to prepare: " + m.float_missing;
    return;
  }
  if (m.float_synthetic) {
    // The named float model is absent and the fallback stands in for it: for the int8 rows too.
    ResolveIntModel(scenario, m);
    return;
  }
  PreparedModelSpec spec;
  spec.checkpoint = m.checkpoint.get();
  spec.model_path = m.checkpoint_dir;
  spec.gguf = m.float_gguf;
  spec.model_sha256 = m.checkpoint_sha256;
  spec.calib_path = ResolveScenarioPath(scenario, scenario.model.prepare_calib);
  if (!PathExists(spec.calib_path)) {
    throw ScenarioError(scenario.path + ": model.prepare.calib '" + scenario.model.prepare_calib +
                        "' does not exist");
  }
  spec.samples = scenario.model.prepare_samples;
  spec.len = scenario.model.prepare_len;
  m.artifact = LoadPreparedModel(spec, [](const std::string& dir) {
    std::fprintf(stderr,
                 "detverify: preparing the scenario's float model into %s (once; a minute for "
                 "SmolLM2-135M)\n",
                 dir.c_str());
  });
  m.artifact_path = m.artifact->dir();
  m.source = "prepared:" + BaseName(m.checkpoint_dir);
}

}  // namespace

std::string ResolveScenarioPath(const Scenario& scenario, const std::string& path) {
  if (path.empty() || path.front() == '/' || PathExists(path)) return path;
  const size_t slash = scenario.path.rfind('/');
  if (slash == std::string::npos) return path;
  const std::string beside = scenario.path.substr(0, slash + 1) + path;
  return PathExists(beside) ? beside : path;
}

db::ArtifactRecord ResolvedModel::Record(EngineKind engine) const {
  const bool float_side = engine == EngineKind::kFloat ? checkpoint != nullptr : !artifact;
  if (float_side) {
    return {checkpoint_sha256, float_source, float_synthetic, checkpoint_config_sha256};
  }
  return {artifact->sha256(), source, synthetic, artifact->config_sha256()};
}

int64_t ResolvedModel::Vocab(EngineKind engine) const {
  const bool float_side = engine == EngineKind::kFloat ? checkpoint != nullptr : !artifact;
  return float_side ? checkpoint->config().vocab : artifact->weights().config.vocab;
}

std::string ResolvedModel::TokenizerDir() const {
  return artifact ? artifact->dir() : checkpoint_dir;
}

ResolvedModel ResolveModel(const Scenario& scenario, bool with_float) {
  ResolvedModel m;
  if (scenario.model.prepare) {
    // The int8 rows' model is made from the float rows' one: that is resolved first.
    ResolveFloatModel(scenario, m);
    ResolvePreparedIntModel(scenario, m);
  } else {
    ResolveIntModel(scenario, m);
    if (with_float) ResolveFloatModel(scenario, m);
  }
  if (!m.artifact && !m.checkpoint) {
    throw ScenarioError(scenario.path + ": " +
                        (with_float ? m.int_missing + "; " + m.float_missing : m.int_missing));
  }
  return m;
}

ResolvedPrompt ResolvePromptWithTokenizer(const Scenario& scenario, const ResolvedModel& model) {
  ResolvedPrompt out;
  out.ids = scenario.prompt.ids;
  if (out.ids.empty()) {
    // Float rows alone, of a GGUF model: its own tokenizer and chat template.
    const std::string path = !model.artifact && model.float_gguf
                                 ? model.checkpoint_dir
                                 : PromptTokenizerPath(model.TokenizerDir());
    out.ids = TokenizePromptText(scenario, path);
    out.tokenizer_sha256 = Sha256FileHex(path);
    out.tokenizer_path = path;
  }
  std::vector<int32_t>& ids = out.ids;
  if (scenario.prompt.first_tokens > 0) {
    if (static_cast<int64_t>(ids.size()) < scenario.prompt.first_tokens) {
      throw ScenarioError(scenario.path + ": the prompt has " + std::to_string(ids.size()) +
                          " tokens, fewer than first_tokens " +
                          std::to_string(scenario.prompt.first_tokens));
    }
    ids.resize(static_cast<size_t>(scenario.prompt.first_tokens));
  }
  if (!scenario.prompt.expect_ids.empty() && ids != scenario.prompt.expect_ids) {
    size_t i = 0;
    while (i < ids.size() && i < scenario.prompt.expect_ids.size() &&
           ids[i] == scenario.prompt.expect_ids[i]) {
      ++i;
    }
    throw ScenarioError(scenario.path +
                        ": the prompt tokenizes to ids that differ from prompt.expect_ids at "
                        "index " +
                        std::to_string(i) + " (" + std::to_string(ids.size()) + " ids vs " +
                        std::to_string(scenario.prompt.expect_ids.size()) + " expected)");
  }
  // Every selected row's model must take the prompt.
  int64_t vocab = model.artifact ? model.artifact->weights().config.vocab : INT64_MAX;
  if (model.checkpoint) vocab = std::min(vocab, model.checkpoint->config().vocab);
  for (int32_t id : ids) {
    if (id >= vocab) {
      throw ScenarioError(scenario.path + ":" + std::to_string(scenario.lines.prompt) +
                          ": prompt token id " + std::to_string(id) +
                          " is outside the model's vocabulary (" + std::to_string(vocab) + ")");
    }
  }
  CheckAgainstModel(scenario, model, ids);
  return out;
}

void CheckAgainstModel(const Scenario& scenario, const ResolvedModel& resolved,
                       const std::vector<int32_t>& prompt) {
  // The tighter of the two models' limits, when a scenario names both.
  struct Limits {
    int64_t max_pos = INT64_MAX;
    int64_t vocab = INT64_MAX;
  } model;
  if (resolved.artifact) {
    model.max_pos = resolved.artifact->weights().config.max_pos;
    model.vocab = resolved.artifact->weights().config.vocab;
  }
  if (resolved.checkpoint) {
    const int64_t checkpoint_pos = resolved.checkpoint->config().max_pos;
    if (checkpoint_pos > 0) model.max_pos = std::min(model.max_pos, checkpoint_pos);
    model.vocab = std::min(model.vocab, resolved.checkpoint->config().vocab);
  }
  auto fail = [&](int line, const std::string& what) {
    throw ScenarioError(scenario.path + ":" + std::to_string(line) + ": " + what);
  };
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  // The last generated token is never fed: a row holds prompt + max_new - 1 positions.
  if (prompt_len + scenario.max_new - 1 > model.max_pos) {
    fail(scenario.lines.max_new, "generate.max_new " + std::to_string(scenario.max_new) +
                                     " with a prompt of " + std::to_string(prompt_len) +
                                     " tokens needs " +
                                     std::to_string(prompt_len + scenario.max_new - 1) +
                                     " positions; the model has " + std::to_string(model.max_pos));
  }
  bool batched = false;
  for (const Configuration& c : scenario.configurations) {
    if (c.split_prefill > prompt_len) {
      fail(c.split_line, c.name + ".split.prefill " + std::to_string(c.split_prefill) +
                             " is longer than the prompt (" + std::to_string(prompt_len) +
                             " tokens)");
    }
    batched = batched || c.batch.size > 1;
  }
  const CoPromptSpec& co = scenario.co_prompts;
  if (scenario.lines.co_prompt_vocab > 0 && co.max_id >= model.vocab) {
    fail(scenario.lines.co_prompt_vocab, "co_prompts.vocab [" + std::to_string(co.min_id) + ", " +
                                             std::to_string(co.max_id) +
                                             "] is outside the model's vocabulary (ids 0 to " +
                                             std::to_string(model.vocab - 1) + ")");
  }
  if (batched && co.max_len + scenario.max_new - 1 > model.max_pos) {
    fail(scenario.lines.co_prompt_length,
         "co-prompts of up to " + std::to_string(co.max_len) + " tokens with generate.max_new " +
             std::to_string(scenario.max_new) + " need " +
             std::to_string(co.max_len + scenario.max_new - 1) + " positions; the model has " +
             std::to_string(model.max_pos));
  }
}

std::vector<int32_t> ResolvePrompt(const Scenario& scenario, const ResolvedModel& model) {
  return ResolvePromptWithTokenizer(scenario, model).ids;
}

PlannedRun PlanConfiguration(const Scenario& scenario, const std::string& scenario_id,
                             const Configuration& c, const ResolvedModel& model,
                             const ResolvedPrompt& prompt) {
  PlannedRun out;
  plan::RunPlan& p = out.plan;
  p.scenario_name = scenario.name;
  p.scenario_id = scenario_id;
  p.name = c.name;
  p.engine = c.engine;
  p.dtype = c.dtype;
  p.backend = c.backend;
  p.cuda_graphs = c.cuda_graphs;
  p.platform = c.platform;
  p.model = PlanModelOf(model, scenario, c.engine);
  p.prompt.ids = prompt.ids;
  p.prompt.tokenizer_sha256 = prompt.tokenizer_sha256;
  p.batch.size = c.batch.size;
  p.batch.position = c.batch.position;
  p.batch.co_prompts = c.batch.co_prompts;
  out.skip_reason = SkipReason(c, model);
  if (c.batch.size > 1 && (model.artifact || model.checkpoint)) {
    CoPromptSpec spec = scenario.co_prompts;
    spec.count = c.batch.size - 1;
    p.batch.co_prompt_ids = MakeCoPrompts(spec, model.Vocab(c.engine));
  }
  p.split_prefill = c.split_prefill;
  p.max_new = scenario.max_new;
  p.timeout_s = c.timeout_s;
  // The int8 rows compute their artifact's semantics (detllm-v1, or its Llama variant).
  p.spec_version = c.engine == EngineKind::kInt8 && model.artifact
                       ? SpecVersionOf(model.artifact->weights().config)
                       : build::kSpecVersion;
  if (c.engine == EngineKind::kFloat) {
    // OpenBLAS's own default is every CPU; the plan names the count so the child sets it.
    p.threads = c.threads > 0 ? c.threads
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    return out;
  }
  p.threads = c.threads > 0 ? c.threads : DefaultBackendThreads(c.backend);
  if (!out.skip_reason.empty()) return out;
  // An emulated child runs on another CPU: it picks its own level (DETVERIFY_CPU_ISA, which it
  // inherits, or its widest), so only a native plan names the level this CPU will use.
  if (!c.platform.empty()) return out;
  try {
    BackendOptions options;
    options.threads = c.threads;
    const ResolvedBackend resolved = ResolveBackend(c.backend, options);
    p.threads = resolved.threads;
    p.isa = resolved.isa;
  } catch (const BackendError& e) {
    out.error = e.what();
  }
  return out;
}

}  // namespace dv::harness
