// model.prepare: the int artifact a scenario derives from its float model -- the GGUF or Hugging
// Face checkpoint its float rows run, prepared by `detverify prepare` with the scenario's
// calibration text -- made once and cached, keyed by what determines its bytes (the model's and
// the text's sha256, the sample count and length), so a scenario can show one trained model's
// int8 and float rows with nothing prepared by hand.
//
// The same artifact by hand:
//   detverify prepare --gguf MODEL --calib TEXT --calib-samples N --calib-len L --out DIR
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "checkpoint/float_checkpoint.h"
#include "engine/artifact.h"

namespace dv::harness {

struct PreparedModelSpec {
  const FloatCheckpoint* checkpoint = nullptr;
  std::string model_path;    // the GGUF file or the checkpoint folder
  bool gguf = false;         // model_path is a GGUF (its tokenizer goes into the artifact)
  std::string model_sha256;  // the checkpoint's content digest
  std::string calib_path;    // the calibration text
  int64_t samples = 0, len = 0;
};

// <cache root>/prepared/<model sha256:16>-<calib sha256:16>-<samples>x<len>.
std::string PreparedModelCacheDir(const PreparedModelSpec& spec, const std::string& calib_sha256);

// Loads the prepared artifact from the cache, preparing it first when absent (`on_preparation`
// is told; a minute for SmolLM2-135M on two cores). Two processes preparing at once both succeed.
// Throws ExpectedError naming the file (unreadable calibration text, too few tokens, ...).
std::unique_ptr<Artifact> LoadPreparedModel(const PreparedModelSpec& spec,
                                            void (*on_preparation)(const std::string& dir));

}  // namespace dv::harness
