// RunPlan: one configuration of a scenario, resolved once by the parent into everything a child
// needs and nothing it must look up again -- the model and its SHA-256, the prompt's token ids
// (already tokenized) and the co-prompts' ids, batch position and prefill split, engine, backend
// with the SIMD level and thread count it will use, platform. The parent stores the plan's
// canonical JSON in the run row (runs.config_json), hands the same text to the child, and the
// child checks the model's SHA-256 against it before it runs. So what a row says it ran is what
// it ran.
//
// The JSON is canonical (sorted keys, integers and strings only) and versioned (plan_version);
// a child refuses a plan of another version or with unknown keys. The keys name, engine,
// backend, dtype, batch.size, batch.position, batch.co_prompts, split_prefill, cuda_graphs,
// threads and platform keep the meaning they had in the configuration JSON of earlier rows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected_error.h"
#include "base/run_kinds.h"

namespace dv::plan {

inline constexpr int64_t kRunPlanVersion = 1;

// A plan that cannot be read: not JSON, another plan_version, a missing or unknown key, a value
// of the wrong type or range. "<source>: <problem>".
class PlanError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

// Where the model comes from. The int8 engine runs an int artifact folder or a built-in synthetic
// preset; the float engine reads a Hugging Face checkpoint folder or a GGUF file.
enum class ModelSource : uint8_t { kArtifact, kSynthetic, kHfCheckpoint, kGguf };

struct PlanModel {
  ModelSource source = ModelSource::kSynthetic;
  std::string path;    // absolute: the artifact or checkpoint folder, or the .gguf file ("" for
                       // synthetic)
  std::string preset;  // synthetic only, e.g. "qwen3-0.6b"
  uint64_t seed = 0;   // synthetic only
  // Identity, checked by the child before anything runs: artifact and synthetic, the SHA-256 of
  // model.safetensors and of config.json; a GGUF file, its SHA-256; a Hugging Face folder, the
  // checkpoint module's digest of its files (config_sha256 that of config.json).
  std::string sha256;
  std::string config_sha256;
  std::string label;  // the DB's artifact source: "artifact:<dir name>", "synthetic:<p> seed=<n>"
  bool synthetic = false;
};

struct PlanPrompt {
  std::vector<int32_t> ids;      // our row's token ids, tokenized by the parent
  std::string tokenizer_sha256;  // SHA-256 of the tokenizer.json that produced them ("" for ids)
};

struct PlanBatch {
  int64_t size = 1;
  int64_t position = 0;                             // our row's index
  bool co_prompts = false;                          // the other rows are the scenario's co-prompts
  std::vector<std::vector<int32_t>> co_prompt_ids;  // size - 1 rows, in batch order without ours
};

struct RunPlan {
  std::string scenario_name, scenario_id;
  std::string name;  // the configuration
  EngineKind engine = EngineKind::kInt8;
  FloatDType dtype = FloatDType::kFp32;  // float only
  BackendKind backend = BackendKind::kReference;
  // cpu backend: the SIMD level it runs at ("avx512vnni", ...); "" elsewhere, and for an
  // emulated platform, whose child picks its own (DETVERIFY_CPU_ISA or its widest).
  std::string isa;
  int64_t threads = 1;  // resolved: the count the backend runs with
  bool cuda_graphs = false;
  std::string platform;  // "" (this machine), "aarch64", "s390x" (emulated, qemu-user)
  PlanModel model;
  PlanPrompt prompt;
  PlanBatch batch;
  int64_t split_prefill = 0;  // 0: whole prompt at once
  int64_t max_new = 1;
  int64_t timeout_s = 3600;  // the parent's limit for the child
  std::string spec_version;  // the arithmetic the ids are hashed under (detllm-v1)
};

std::string_view ModelSourceName(ModelSource source);  // "artifact", "synthetic", "hf", "gguf"

nlohmann::json PlanJson(const RunPlan& plan);
// The canonical text: what the run row stores, what the child reads, what plan_sha256 hashes.
std::string CanonicalPlanText(const RunPlan& plan);
// Parses and checks a plan; `source` names it in errors. Throws PlanError.
RunPlan ParsePlan(std::string_view text, const std::string& source);

}  // namespace dv::plan
