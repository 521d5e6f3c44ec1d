// Scenario files (scenarios/README.md): a model, a prompt, a generation length, seeded
// co-prompts, expected hashes and a list of configurations, parsed from YAML with every problem
// reported as "file:line: problem". Unknown keys and duplicate configuration names are errors.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/expected_error.h"
#include "base/run_kinds.h"
#include "engine/co_prompts.h"
#include "verdict/expected_hashes.h"

namespace dv::harness {

class ScenarioError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

// The scenario's two models: the int artifact its int8 rows run and the Hugging Face checkpoint
// its float rows run. The synthetic fallback stands in for whichever is absent: the int preset
// for the artifact, `synth --format hf` of the same preset for the checkpoint.
struct ModelSpec {
  std::string artifact;         // int artifact folder as written (may be empty)
  std::string hf;               // Hugging Face checkpoint folder as written (may be empty)
  std::string gguf;             // or a Llama-family GGUF file for the float rows (may be empty)
  std::string fallback_preset;  // "qwen3-0.6b" from "synthetic:qwen3-0.6b" (may be empty)
  // "synthetic": the int synthetic preset (integer PRNG, engine/synth.h); "prepared": the
  // synthetic float checkpoint of that preset prepared with the built-in calibration
  // (prepare/prepared_synthetic.h), the model the float rows run too.
  std::string fallback_kind = "synthetic";
  uint64_t fallback_seed = 0;
  // model.prepare: the int8 rows run the float model (gguf or hf) prepared with this
  // calibration text, once, into the cache (harness/prepared_model.h).
  bool prepare = false;
  std::string prepare_calib;  // as written
  int64_t prepare_samples = 8, prepare_len = 512;
};

struct PromptSpec {
  std::vector<int32_t> ids;         // given directly, or
  std::string text;                 // text to tokenize, or
  std::string text_file;            // a file of text to tokenize (resolved path)
  bool chat = false;                // wrap the text in the Qwen3 chat template
  int64_t first_tokens = 0;         // keep only the first N tokens (0: all)
  std::vector<int32_t> expect_ids;  // text prompts: the ids the tokenizer must produce (a check)
};

struct BatchSpec {
  int64_t size = 1;
  bool co_prompts = false;  // fill the other rows with the scenario's random co-prompts
  int64_t position = 0;     // our row's index in the batch
};

struct Configuration {
  std::string name;
  EngineKind engine = EngineKind::kInt8;
  BackendKind backend = BackendKind::kReference;
  FloatDType dtype = FloatDType::kFp32;  // float rows (default fp32, fp16 on cuda)
  BatchSpec batch;
  int64_t split_prefill = 0;  // 0: whole prompt at once
  bool cuda_graphs = false;
  int64_t timeout_s = 0;  // 0: the scenario default
  int threads = 0;        // cpu backend threads, 0: all cores
  // "" runs on this machine; "aarch64" or "s390x" runs that architecture's detverify-engine
  // (DETVERIFY_CROSS_BIN_AARCH64 / _S390X) under qemu-user, an emulated row of its own.
  std::string platform;
  int line = 0;
  int split_line = 0;  // of split.prefill, for the checks against the model's prompt
};

// Where the values checked against the model (CheckAgainstModel) were written, for file:line.
struct ScenarioLines {
  int prompt = 1;
  int max_new = 1;
  int co_prompt_length = 1;
  int co_prompt_vocab = 0;  // 0: co_prompts.vocab not written (the default is clamped to the model)
};

struct Scenario {
  std::string path;  // the file it was read from
  std::string name;
  ModelSpec model;
  PromptSpec prompt;
  int64_t max_new = 0;
  bool show_text = false;  // generate.show_text: print the text of each distinct token chain
  CoPromptSpec co_prompts;
  int64_t timeout_s = 3600;
  std::vector<verdict::ExpectedHashes> expect;
  std::vector<Configuration> configurations;
  ScenarioLines lines;

  const Configuration* Find(const std::string& config_name) const;
};

// Reads and validates `path`. Throws ScenarioError("path:line: problem").
Scenario LoadScenario(const std::string& path);
// The same over the text of a scenario; `path` labels errors.
Scenario ParseScenario(const std::string& text, const std::string& path);

// The scenario as canonical JSON (sorted keys, no whitespace): its identity in result DBs, so
// reformatting the YAML does not change it. Paths are kept as written.
std::string CanonicalScenarioText(const Scenario& scenario);

}  // namespace dv::harness
