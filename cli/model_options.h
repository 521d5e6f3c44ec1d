// --artifact DIR | --preset NAME --seed N, shared by the verbs that load a model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/artifact.h"

namespace dv::cli {

struct ModelOptions {
  std::string artifact;
  std::string preset;
  uint64_t seed = 0;

  void AddTo(CLI::App* cmd);
  // Loads the artifact or the synthetic preset (cached); throws UsageError when neither is
  // given. `source` describes where it came from, for reports.
  std::unique_ptr<Artifact> Load(std::string* source) const;
};

// "1,2,3" -> {1,2,3}; `what` names the option in errors.
std::vector<int32_t> ParseIds(const std::string& text, const std::string& what);

}  // namespace dv::cli
