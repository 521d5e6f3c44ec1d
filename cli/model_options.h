// --artifact DIR | --hf DIR | --gguf FILE | --preset NAME --seed N, shared by the verbs that load a
// model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/run_kinds.h"
#include "engine/artifact.h"
#ifndef DV_CLI_ENGINE_ONLY
#include "checkpoint/float_checkpoint.h"
#endif

namespace dv::cli {

struct ModelOptions {
  std::string artifact;
  std::string hf;    // a Hugging Face checkpoint folder (the float engine)
  std::string gguf;  // a Llama-family GGUF file (the float engine)
  std::string preset;
  uint64_t seed = 0;

  void AddTo(CLI::App* cmd);
  // The int artifact, or the synthetic preset (cached); throws UsageError when neither is
  // given (or when only --hf or --gguf is). `source` describes where it came from, for reports.
  std::unique_ptr<Artifact> Load(std::string* source) const;
#ifndef DV_CLI_ENGINE_ONLY
  // The float checkpoint: --hf DIR, --gguf FILE (dequantized to float32, as transformers loads
  // a GGUF), or the preset synthesized as a Hugging Face checkpoint (`synth --format hf`,
  // cached); throws UsageError for --artifact (an int artifact has no float weights).
  std::unique_ptr<FloatCheckpoint> LoadFloat(std::string* source) const;
#endif
};

// "1,2,3" -> {1,2,3}; `what` names the option in errors.
std::vector<int32_t> ParseIds(const std::string& text, const std::string& what);

// --engine float on --backend `backend` (spelled `name`) with --dtype `dtype` ("" for the
// default): the dtype to run ("fp32" on the cpu, "fp16" on cuda), or a UsageError where the
// float engine does not run so: a backend other than cpu and cuda, cuda in a build without
// DETVERIFY_CUDA, a dtype other than fp16 on cuda.
std::string FloatDTypeOn(BackendKind backend, const std::string& name, const std::string& dtype);

}  // namespace dv::cli
