// Shared test fixtures: locating test data and loading the DetLLM compatibility fixtures.
#pragma once

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace dv::test {

// tests/data/ of the source tree (DETVERIFY_SOURCE_DIR is set by dv_add_test).
inline std::string DataDir() {
  const char* src = std::getenv("DETVERIFY_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/data";
}

// A DetLLM fixture folder (artifact + expected.json), copied from shared/detllm/fixtures.
inline std::string FixtureDir(const std::string& name) { return DataDir() + "/detllm/" + name; }

inline nlohmann::json LoadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace dv::test
