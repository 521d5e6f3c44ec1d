#include "plan/plan_executor.h"

#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "base/file_io.h"
#include "base/sha256.h"
#include "build_info.h"
#include "engine/artifact.h"
#include "engine/backends/backend_registry.h"
#include "engine/co_prompts.h"
#include "engine/generate.h"
#include "engine/model_source.h"
#include "fingerprint/fingerprint.h"
#ifdef DV_PLAN_FLOAT_ENGINE
#include "checkpoint/hf_checkpoint.h"
#include "float_engine/blas.h"
#include "float_engine/float_generate.h"
#ifdef DV_PLAN_FLOAT_CUDA
#include "float_engine/cuda_fp16_linear.h"
#endif
#include "gguf/gguf_checkpoint.h"
#endif

namespace dv::plan {
namespace {

// The backend's device (the fingerprint's "gpu"): an object of its facts, null for host backends.
nlohmann::json DeviceFactsJson(const Backend& backend) {
  const auto facts = backend.DeviceFacts();
  if (facts.empty()) return nullptr;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : facts) out[key] = value;
  return out;
}

// A plan is a few kilobytes (ids of a prompt and its co-prompts); far below this.
constexpr size_t kMaxPlanBytes = 64 * kMiB;

// The model the plan names, checked against its digests.
std::unique_ptr<Artifact> LoadPlanModel(const RunPlan& plan) {
  std::unique_ptr<Artifact> artifact;
  std::string where;
  switch (plan.model.source) {
    case ModelSource::kArtifact:
      artifact = Artifact::Load(plan.model.path);
      where = plan.model.path;
      break;
    case ModelSource::kSynthetic:
      artifact = LoadSynthetic(plan.model.preset, plan.model.seed);
      where = "synthetic:" + plan.model.preset + " seed=" + std::to_string(plan.model.seed) + " (" +
              artifact->dir() + ")";
      break;
    case ModelSource::kHfCheckpoint:
    case ModelSource::kGguf:
      throw PlanError("run plan " + plan.name + ": a " +
                      std::string(ModelSourceName(plan.model.source)) +
                      " model is run by the float engine, not the int8 engine");
  }
  if (artifact->sha256() != plan.model.sha256) {
    throw PlanError(where + ": model.safetensors has sha256 " + artifact->sha256().substr(0, 16) +
                    ", the run plan names " + plan.model.sha256.substr(0, 16) +
                    " (the artifact changed after the run was planned?)");
  }
  if (artifact->config_sha256() != plan.model.config_sha256) {
    throw PlanError(where + ": config.json has sha256 " + artifact->config_sha256().substr(0, 16) +
                    ", the run plan names " + plan.model.config_sha256.substr(0, 16));
  }
  return artifact;
}

#ifdef DV_PLAN_FLOAT_ENGINE
// The Hugging Face checkpoint or GGUF file a float plan names, checked against its digests.
std::unique_ptr<FloatCheckpoint> LoadFloatPlanModel(const RunPlan& plan) {
  if (plan.model.source == ModelSource::kGguf) {
    auto checkpoint = gguf::OpenGgufCheckpoint(plan.model.path);
    if (checkpoint->ContentSha256() != plan.model.sha256) {
      throw PlanError(plan.model.path + ": the GGUF file has sha256 " +
                      checkpoint->ContentSha256().substr(0, 16) + ", the run plan names " +
                      plan.model.sha256.substr(0, 16) + " (it changed after the run was planned?)");
    }
    return checkpoint;
  }
  if (plan.model.source != ModelSource::kHfCheckpoint) {
    throw PlanError("run plan " + plan.name + ": the float engine runs a Hugging Face checkpoint " +
                    "(hf) or a GGUF file, not a " +
                    std::string(ModelSourceName(plan.model.source)) + " model");
  }
  auto checkpoint = OpenHfCheckpoint(plan.model.path);
  if (checkpoint->ContentSha256() != plan.model.sha256) {
    throw PlanError(plan.model.path + ": the checkpoint's weights have sha256 " +
                    checkpoint->ContentSha256().substr(0, 16) + ", the run plan names " +
                    plan.model.sha256.substr(0, 16) + " (it changed after the run was planned?)");
  }
  const std::string config_sha256 = Sha256FileHex(plan.model.path + "/config.json");
  if (config_sha256 != plan.model.config_sha256) {
    throw PlanError(plan.model.path + ": config.json has sha256 " + config_sha256.substr(0, 16) +
                    ", the run plan names " + plan.model.config_sha256.substr(0, 16));
  }
  return checkpoint;
}
#endif

// A float contrast row: the plan's checkpoint through the float engine (fp32 or bf16, OpenBLAS
// with the plan's thread count), the same batch and split, the same chains over the float32
// logits' bytes; our row's step-0 logits go back with the hashes.
PlanResult ExecuteFloatPlan(const RunPlan& plan, const std::string& plan_sha256,
                            const ProgressFn& progress) {
#ifdef DV_PLAN_FLOAT_ENGINE
  FloatEngineOptions fo;
  fo.dtype = ParseFloatDType(std::string(KindName(plan.dtype)));
  fo.threads = static_cast<int>(plan.threads);
  if (plan.backend == BackendKind::kCuda) {
#ifdef DV_PLAN_FLOAT_CUDA
    if (plan.dtype != FloatDType::kFp16) {
      throw PlanError("run plan " + plan.name + ": the float engine on cuda runs fp16, not " +
                      std::string(KindName(plan.dtype)));
    }
    fo.linear = MakeCudaFp16Linear();
#else
    throw PlanError("run plan " + plan.name + ": this build has no float engine on cuda");
#endif
  } else if (plan.backend != BackendKind::kCpu) {
    throw PlanError("run plan " + plan.name + ": the float engine runs on cpu or cuda, not " +
                    std::string(KindName(plan.backend)));
  }
  const auto checkpoint = LoadFloatPlanModel(plan);
  FloatQwen3 model(*checkpoint, fo);
  const auto rows = ComposeBatch(plan.prompt.ids, plan.batch.co_prompt_ids, plan.batch.position);
  GenerationOptions go;
  go.max_new = plan.max_new;
  go.split = plan.split_prefill;
  const auto ours = static_cast<size_t>(plan.batch.position);
  PlanResult out;
  const auto t0 = std::chrono::steady_clock::now();
  const auto results = GenerateGreedyFloat(
      model, rows, go,
      [&](size_t row, int64_t step, int64_t total) {
        if (row == ours && progress) progress(step + 1, total);
      },
      [&](size_t row, int64_t step, std::span<const float> logits) {
        if (row != ours || step != 0) return;
        out.step0_logits.resize(logits.size() * 4);
        for (size_t i = 0; i < logits.size(); ++i) {
          const auto bits = std::bit_cast<uint32_t>(logits[i]);
          for (size_t b = 0; b < 4; ++b) {
            out.step0_logits[4 * i + b] = static_cast<uint8_t>(bits >> (8 * b));
          }
        }
      });
  out.generate_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  out.plan_sha256 = plan_sha256;
  out.model_sha256 = checkpoint->ContentSha256();
  out.threads = BlasThreads();
  nlohmann::json gpu = nullptr;
  if (fo.linear) {
    gpu = nlohmann::json::object();
    for (const auto& [key, value] : fo.linear->DeviceFacts()) gpu[key] = value;
  }
  out.fingerprint = fingerprint::CollectFingerprint(std::move(gpu));
  const RowResult& r = results[ours];
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    out.steps.push_back({r.tokens[i], r.logits_chain[i], r.token_chain[i]});
  }
  return out;
#else
  (void)plan_sha256;
  (void)progress;
  throw PlanError("run plan " + plan.name + ": the float engine is not part of this build");
#endif
}

}  // namespace

PlanResult ExecutePlan(const RunPlan& plan, const std::string& plan_sha256,
                       const ProgressFn& progress) {
  if (plan.engine == EngineKind::kFloat) {
    if (plan.spec_version != build::kSpecVersion) {
      throw PlanError("run plan " + plan.name + ": spec " + plan.spec_version + ", this build " +
                      "computes " + build::kSpecVersion);
    }
    return ExecuteFloatPlan(plan, plan_sha256, progress);
  }
  const std::unique_ptr<Artifact> artifact = LoadPlanModel(plan);
  // The artifact's semantics: detllm-v1, or its no-QK-Norm variant (docs/SPEC.md §9).
  const std::string spec = SpecVersionOf(artifact->weights().config);
  if (plan.spec_version != spec) {
    throw PlanError("run plan " + plan.name + ": spec " + plan.spec_version + ", but its model " +
                    "computes " + spec);
  }
  BackendOptions options;
  options.threads = static_cast<int>(plan.threads);
  options.cpu_isa = plan.isa;
  // A cuda row decodes through CUDA graphs only where its configuration asks (cuda_graphs);
  // the backend's facts in the fingerprint say which ran.
  options.cuda_graphs = plan.cuda_graphs;
  const ResolvedBackend resolved = ResolveBackend(plan.backend, options);
  auto backend = MakeBackend(resolved);
  IntQwen3 model(artifact->weights(), *backend);
  const auto rows = ComposeBatch(plan.prompt.ids, plan.batch.co_prompt_ids, plan.batch.position);
  GenerationOptions go;
  go.max_new = plan.max_new;
  go.split = plan.split_prefill;
  const auto ours = static_cast<size_t>(plan.batch.position);
  const auto t0 = std::chrono::steady_clock::now();
  const auto results =
      GenerateGreedy(model, rows, go, [&](size_t row, int64_t step, int64_t total) {
        if (row == ours && progress) progress(step + 1, total);
      });
  PlanResult out;
  out.generate_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  out.plan_sha256 = plan_sha256;
  out.model_sha256 = artifact->sha256();
  out.isa = resolved.isa;
  out.threads = backend->NumThreads();
  out.wrap_events = model.wrap_events();
  nlohmann::json gpu = DeviceFactsJson(*backend);
  out.fingerprint = fingerprint::CollectFingerprint(std::move(gpu));
  const RowResult& r = results[ours];
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    out.steps.push_back({r.tokens[i], r.logits_chain[i], r.token_chain[i]});
  }
  return out;
}

int RunPlanChild(const std::string& plan_path, const std::string& result_path) {
  std::string text, why;
  if (!ReadFileBounded(plan_path, kMaxPlanBytes, text, why)) {
    throw PlanError(plan_path + ": " + why);
  }
  const RunPlan plan = ParsePlan(text, plan_path);
  std::string fault;
  if (const char* f = std::getenv("DETVERIFY_FAULT")) fault = std::string(",") + f + ",";
  const bool crash = fault.find(",crash:" + plan.name + ",") != std::string::npos;
  const bool hang = fault.find(",hang:" + plan.name + ",") != std::string::npos;
  const PlanResult result = ExecutePlan(plan, Sha256Hex(text), [&](int64_t done, int64_t total) {
    std::printf("progress %lld %lld\n", static_cast<long long>(done),
                static_cast<long long>(total));
    std::fflush(stdout);
    if (done == 2 && crash) std::abort();
    if (done == 2 && hang) {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  WriteFileAtomic(result_path, ResultJson(result).dump());
  return 0;
}

}  // namespace dv::plan
