// Backends by name: "reference" always; "cpu" and "cuda" when built. Unknown or unavailable
// names give BackendError naming what this build offers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/backends/backend.h"

namespace dv {

struct BackendOptions {
  int threads = 0;  // 0: all cores (cpu backend)
};

std::unique_ptr<Backend> MakeBackend(const std::string& name, const BackendOptions& options = {});
std::vector<std::string> AvailableBackends();
// True when `name` is a backend this build and machine can run (e.g. false for cuda without GPU).
bool BackendAvailable(const std::string& name);

}  // namespace dv
