// `detverify prepare`: a float checkpoint in, a detllm-v1 int artifact folder out -- the only
// float stage of the pipeline, and a reproducible one. The pipeline:
//   1. refuse what the artifact cannot hold (recipe.h CheckPreparable) and weights that are NaN
//      or infinite;
//   2. calibration statistics: given (a file, DetLLM's own or ours), or collected by the float64
//      calibration forward (calib_forward.h) over a CalibrationSet;
//   3. DetLLM's quantization recipe (recipe.h);
//   4. the folder written as a whole: model.safetensors in Python safetensors' layout,
//      config.json with DetLLM's keys and formatting (json.dump indent 1) followed by detverify's
//      provenance keys, tokenizer.json copied from the checkpoint when it has one -- into a
//      temporary folder beside the output that is renamed into place only when complete and
//      loadable (Artifact::Load), so a failure or a crash never leaves a partial artifact.
// Same checkpoint + same calibration (+ same options) = same bytes, on every machine.
//
// This is the entry point for every checkpoint source: a Hugging Face folder
// (OpenHfCheckpoint) today, a GGUF file (a FloatCheckpoint with ModelFamily::kLlama) later --
// whatever builds a FloatCheckpoint can be prepared once its family has an integer variant.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "checkpoint/float_checkpoint.h"
#include "prepare/calib_forward.h"
#include "prepare/calib_stats.h"
#include "prepare/calibration_set.h"
#include "prepare/recipe.h"

namespace dv {

struct PrepareOptions {
  std::string out_dir;
  bool force = false;  // replace an existing out_dir
  // Exactly one of: statistics to use, or a calibration to run.
  std::optional<CalibStats> stats;
  std::optional<CalibrationSet> calibration;
  std::string save_stats_path;  // also write the statistics here ("" = no)
  std::string stats_source;     // for the provenance, when `stats` came from a file
  RecipeOptions recipe;         // model_id empty: the checkpoint folder's name
  std::string tokenizer_json;   // copied into the artifact when non-empty
  // Writes further files into the (temporary) artifact folder before it is checked and renamed
  // into place, e.g. the tokenizer a GGUF model carries; may be empty.
  std::function<void(const std::string& dir)> write_extra_files;
  int threads = 1;
  std::optional<GemmIsa>
      isa;  // the calibration GEMM's level (unset: DETVERIFY_PREPARE_ISA or best)
  ProgressFn progress;
};

struct PrepareResult {
  std::string out_dir;
  std::string sha256;         // of model.safetensors
  std::string config_sha256;  // of config.json
  int64_t rope_sensitive_entries = 0;
  double calibration_seconds = 0, quantization_seconds = 0;
};

// Throws ArtifactError with one line naming the file and the problem; out_dir is then untouched.
PrepareResult PrepareArtifact(const FloatCheckpoint& checkpoint, const PrepareOptions& options);

// The config.json text of a prepared model: DetLLM's json.dump(indent=1) form (ensure_ascii,
// no trailing newline).
std::string ArtifactConfigText(const nlohmann::ordered_json& config);

}  // namespace dv
