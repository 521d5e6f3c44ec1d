// DetLLM's own functions at the int64 edges (tests/data/detllm_edges/edges.json, made with
// DetLLM's Python and PyPI torch; the README beside it says how): the cases of one operation,
// with the helpers that read their integer rows. Header-only, shared by the core tests and the
// every-backend row-operation tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dv::test_edges {

inline const nlohmann::json& Document() {
  static const nlohmann::json doc = [] {
    const char* src = std::getenv("DETVERIFY_SOURCE_DIR");
    const std::string path = std::string(src ? src : ".") + "/tests/data/detllm_edges/edges.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot open");
    return nlohmann::json::parse(in);
  }();
  return doc;
}

// The cases of `op` (DetLLM's function name), in file order; at least one, or the test fails.
inline std::vector<nlohmann::json> Cases(const std::string& op) {
  std::vector<nlohmann::json> out;
  for (const auto& c : Document()["cases"]) {
    if (c["op"] == op) out.push_back(c);
  }
  EXPECT_FALSE(out.empty()) << "edges.json has no case of " << op;
  return out;
}

// Where a failure comes from: the SPEC site, the note, the case's index among its op's cases.
inline std::string Where(const nlohmann::json& c, size_t i) {
  return c["op"].get<std::string>() + " case " + std::to_string(i) + " (site " +
         c["site"].get<std::string>() +
         (c.contains("note") ? ", " + c["note"].get<std::string>() : "") + ")";
}

// A row: a JSON list, or {"fill": v, "n": n} for n copies of v.
template <typename T = int64_t>
std::vector<T> Row(const nlohmann::json& j) {
  if (j.is_object()) {
    return std::vector<T>(j["n"].get<size_t>(), static_cast<T>(j["fill"].get<int64_t>()));
  }
  std::vector<T> v;
  for (const auto& x : j) v.push_back(static_cast<T>(x.get<int64_t>()));
  return v;
}

// A matrix given as a list of rows (or a fill of 0-dimension rows of width `width`), flattened.
template <typename T = int64_t>
std::vector<T> Rows(const nlohmann::json& j, size_t width) {
  if (j.is_object()) {
    return std::vector<T>(j["n"].get<size_t>() * width, static_cast<T>(j["fill"].get<int64_t>()));
  }
  std::vector<T> v;
  for (const auto& r : j) {
    for (const auto& x : r) v.push_back(static_cast<T>(x.get<int64_t>()));
  }
  return v;
}

inline int64_t I(const nlohmann::json& j, const char* key) { return j[key].get<int64_t>(); }

}  // namespace dv::test_edges
