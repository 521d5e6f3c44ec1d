// Shared test fixtures: locating test data, loading the DetLLM compatibility fixtures, and every
// execution path (backend and ISA level) of this machine.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/backends/backend_registry.h"
#include "engine/backends/cpu_backend.h"

namespace dv::test {

// tests/data/ of the source tree (DETVERIFY_SOURCE_DIR is set by dv_add_test).
inline std::string DataDir() {
  const char* src = std::getenv("DETVERIFY_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/data";
}

// A DetLLM fixture folder (artifact + expected.json), copied from shared/detllm/fixtures.
inline std::string FixtureDir(const std::string& name) { return DataDir() + "/detllm/" + name; }

// The DetLLM fixtures in tests/data/detllm (README.md there describes each).
inline const std::vector<std::string> kDetllmFixtures = {"tiny-a", "tiny-w2", "tiny-w2b"};

// gtest parameter names: "tiny-w2b" -> "tiny_w2b".
inline std::string FixtureParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n) c = (c == '-' || c == '.') ? '_' : c;
  return n;
}

inline nlohmann::json LoadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Each backend, and the cpu backend at each ISA level this machine has (x86-64: scalar, AVX2,
// AVX-512 VNNI as available; aarch64: scalar, NEON, and NEON dot product where the CPU has it;
// elsewhere scalar), named "reference", "cpu/avx2", ...
inline std::vector<std::pair<std::string, std::unique_ptr<Backend>>> EveryExecutionPath() {
  std::vector<std::pair<std::string, std::unique_ptr<Backend>>> paths;
  for (const std::string& name : AvailableBackends()) {
    if (name != "cpu") {
      paths.emplace_back(name, MakeBackend(name));
      continue;
    }
    for (CpuIsa isa : SupportedCpuIsas()) {
      CpuBackendOptions options;
      options.isa = isa;
      paths.emplace_back("cpu/" + std::string(CpuIsaName(isa)), MakeCpuBackend(options));
    }
  }
  return paths;
}

}  // namespace dv::test
