// Shared by the prepare tests: where the fixtures are, a tied copy of a checkpoint folder (DetLLM's
// prepare only takes tied models), and an element-by-element comparison of two int artifacts.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "engine/safetensors.h"
#include "tests/support/scratch_files.h"

namespace dv::test {

// tests/data/ of the source tree (DETVERIFY_SOURCE_DIR is set by dv_add_test).
inline std::string PrepareDataDir() {
  const char* src = std::getenv("DETVERIFY_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/data";
}

// DetLLM's prepare fixture (a copy of shared/detllm/prepare/p-small, tests/data/detllm/prepare).
inline std::string PSmallDir() { return PrepareDataDir() + "/detllm/prepare/p-small"; }

inline nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

// Copies the Hugging Face folder `src` to `dst` with tie_word_embeddings true and without
// lm_head.weight: the same model with its embedding as the head (the synthetic presets are
// untied; DetLLM's prepare.py asserts tied embeddings). The tensors' bytes are unchanged.
inline void WriteTiedCopy(const std::string& src, const std::string& dst) {
  std::filesystem::create_directories(dst);
  nlohmann::ordered_json config =
      nlohmann::ordered_json::parse(test_files::ReadFile(src + "/config.json"));
  config["tie_word_embeddings"] = true;
  test_files::WriteFile(dst + "/config.json", config.dump(2));
  const MappedFile file = MappedFile::Open(src + "/model.safetensors");
  std::map<std::string, TensorData> tensors;
  for (const auto& [name, view] : ParseSafetensors(file.bytes(), src)) {
    if (name == "lm_head.weight") continue;
    tensors[name] = TensorData{view.dtype, view.shape, {view.bytes.begin(), view.bytes.end()}};
  }
  WriteSafetensors(dst + "/model.safetensors", tensors);
}

// How two artifacts of the same shape differ.
struct ArtifactDiff {
  int64_t int8_total = 0, int8_different = 0;
  double worst_int8_identical = 1.0;  // the smallest per-tensor identical fraction
  std::string worst_int8_tensor;
  int64_t int64_total = 0, int64_different = 0;  // every int64 element (m, k constants)
  int64_t int16_different = 0;                   // RoPE tables
  std::vector<std::string> config_differences;   // keys whose values differ (model_id skipped)
  std::vector<std::string> tensor_differences;   // "name: n of m" for each differing tensor

  double int8_identical() const {
    return int8_total ? 1.0 - static_cast<double>(int8_different) / static_cast<double>(int8_total)
                      : 1.0;
  }
};

inline void DiffJson(const std::string& at, const nlohmann::json& a, const nlohmann::json& b,
                     std::vector<std::string>& out) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : b.items()) {
      if (at.empty() && k == "model_id") continue;
      if (!a.contains(k)) {
        out.push_back(at + "/" + k + " missing");
        continue;
      }
      DiffJson(at + "/" + k, a[k], v, out);
    }
    return;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) DiffJson(at + "/" + std::to_string(i), a[i], b[i], out);
    return;
  }
  if (a != b) out.push_back(at + ": " + a.dump() + " vs " + b.dump());
}

// Compares `got` against `want` tensor by tensor (same names, dtypes, shapes required) and the
// config values of `want` (DetLLM's keys; extra keys of `got` are ignored).
inline ArtifactDiff DiffArtifacts(const std::string& got, const std::string& want) {
  ArtifactDiff d;
  const MappedFile fa = MappedFile::Open(got + "/model.safetensors");
  const MappedFile fb = MappedFile::Open(want + "/model.safetensors");
  const auto ta = ParseSafetensors(fa.bytes(), got);
  const auto tb = ParseSafetensors(fb.bytes(), want);
  EXPECT_EQ(ta.size(), tb.size());
  for (const auto& [name, b] : tb) {
    const auto it = ta.find(name);
    if (it == ta.end()) {
      ADD_FAILURE() << got << ": no tensor " << name;
      continue;
    }
    const TensorView& a = it->second;
    if (a.dtype != b.dtype || a.shape != b.shape) {
      ADD_FAILURE() << name << ": dtype or shape differs";
      continue;
    }
    const int64_t size = DTypeSize(a.dtype), n = a.numel();
    int64_t diff = 0;
    for (int64_t i = 0; i < n; ++i) {
      diff +=
          ReadLeInt(a.bytes.data() + i * size, size) != ReadLeInt(b.bytes.data() + i * size, size);
    }
    if (diff)
      d.tensor_differences.push_back(name + ": " + std::to_string(diff) + " of " +
                                     std::to_string(n));
    if (a.dtype == DType::kI8) {
      d.int8_total += n;
      d.int8_different += diff;
      const double identical = 1.0 - static_cast<double>(diff) / static_cast<double>(n);
      if (identical < d.worst_int8_identical) {
        d.worst_int8_identical = identical;
        d.worst_int8_tensor = name;
      }
    } else if (a.dtype == DType::kI64) {
      d.int64_total += n;
      d.int64_different += diff;
    } else {
      d.int16_different += diff;
    }
  }
  DiffJson("", ReadJson(got + "/config.json"), ReadJson(want + "/config.json"),
           d.config_differences);
  return d;
}

// The tensors of the artifact `dir` whose SHA-256 differs from `want` (name -> hex digest).
inline std::vector<std::string> TensorShaDifferences(const std::string& dir,
                                                     const nlohmann::json& want) {
  const MappedFile f = MappedFile::Open(dir + "/model.safetensors");
  std::vector<std::string> out;
  for (const auto& [name, v] : ParseSafetensors(f.bytes(), dir)) {
    if (!want.contains(name)) {
      out.push_back(name + " not in DetLLM's artifact");
    } else if (Sha256Hex(v.bytes) != want[name].get<std::string>()) {
      out.push_back(name);
    }
  }
  if (out.empty() && want.size() != ParseSafetensors(f.bytes(), dir).size()) {
    out.push_back("tensor count");
  }
  return out;
}

inline std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += "\n  " + x;
  return s;
}

}  // namespace dv::test
