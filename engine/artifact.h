// The int artifact (DetLLM layout): a folder with model.safetensors (integer tensors only) and
// config.json (integer constants per layer). Loading validates every tensor's name, dtype, shape
// and offsets against config.json, memory-maps the weights and computes the file's SHA-256.
#pragma once

#include <memory>
#include <string>

#include "base/sha256.h"
#include "engine/model_weights.h"
#include "engine/safetensors.h"

namespace dv {

class Artifact {
 public:
  // Loads and validates `dir`. Throws ArtifactError with a one-line message naming the file and
  // the problem (missing file, truncated or malformed header, overlapping or out-of-range
  // offsets, float or wrong dtype, missing tensor, config that disagrees with the shapes).
  static std::unique_ptr<Artifact> Load(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const std::string& sha256() const { return sha256_; }  // of model.safetensors, 64 hex
  const std::string& config_sha256() const { return config_sha256_; }
  const ModelWeights& weights() const { return weights_; }

 private:
  std::string dir_, sha256_, config_sha256_;
  MappedFile file_;
  ModelWeights weights_;
};

}  // namespace dv
