// Small Hugging Face checkpoint folders written for tests: every tensor HfTensorLayout lists, in a
// chosen dtype, with values from a 7-value pattern exact in BF16, F16 and F32; options drop,
// add, reshape or retype tensors and split them over shards.
#pragma once

#include <bit>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/hf_config.h"
#include "checkpoint/hf_layout.h"
#include "engine/safetensors.h"
#include "tests/support/scratch_files.h"

namespace dv::test {

// Element i of every tensor: kPattern[i % 7].
inline constexpr float kPattern[7] = {-0.75f, -0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f};

inline uint16_t PatternBits16(DType dtype, int i) {
  // The same 7 values as bit patterns (sign | exponent | mantissa).
  static constexpr uint16_t kBf16[7] = {0xBF40, 0xBF00, 0xBE80, 0x0000, 0x3E80, 0x3F00, 0x3F40};
  static constexpr uint16_t kF16[7] = {0xBA00, 0xB800, 0xB400, 0x0000, 0x3400, 0x3800, 0x3A00};
  return dtype == DType::kBF16 ? kBf16[i] : kF16[i];
}

inline TensorData PatternTensor(DType dtype, std::vector<int64_t> shape) {
  TensorData t;
  t.dtype = dtype;
  t.shape = shape;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const int64_t size = DTypeSize(dtype);
  t.bytes.resize(static_cast<size_t>(n * size));
  for (int64_t i = 0; i < n; ++i) {
    const int k = static_cast<int>(i % 7);
    uint64_t bits = 0;
    if (dtype == DType::kF32) {
      bits = std::bit_cast<uint32_t>(kPattern[k]);
    } else if (dtype == DType::kBF16 || dtype == DType::kF16) {
      bits = PatternBits16(dtype, k);
    } else {
      bits = static_cast<uint64_t>(k);  // an integer dtype, for wrong-dtype tests
    }
    for (int64_t b = 0; b < size; ++b) {
      t.bytes[static_cast<size_t>(i * size + b)] = static_cast<uint8_t>(bits >> (8 * b));
    }
  }
  return t;
}

inline FloatModelConfig SmallQwen3() {
  FloatModelConfig c;
  c.n_layers = 2;
  c.hidden = 8;
  c.n_q_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 4;
  c.intermediate = 12;
  c.vocab = 16;
  c.max_pos = 64;
  c.storage_dtype = "bfloat16";
  c.eos_token_ids = {15};
  return c;
}

struct FolderSpec {
  FloatModelConfig config = SmallQwen3();
  DType dtype = DType::kBF16;
  std::set<std::string> drop;                           // tensors left out
  std::map<std::string, TensorData> extra;              // tensors added
  std::map<std::string, std::vector<int64_t>> reshape;  // tensors with another shape
  std::map<std::string, DType> retype;                  // tensors in another dtype
  bool lm_head_beside_tied = false;                     // Qwen3-0.6B's redundant head
  int shards = 1;                                       // > 1: an index and N shards
};

// The tensors of a spec, by name.
inline std::map<std::string, TensorData> SpecTensors(const FolderSpec& s) {
  std::map<std::string, TensorData> tensors;
  std::vector<HfTensorSpec> layout = HfTensorLayout(s.config);
  if (s.lm_head_beside_tied)
    layout.push_back({kHfLmHeadName, {s.config.vocab, s.config.hidden}, HfTensorRole::kLmHead});
  for (const HfTensorSpec& t : layout) {
    if (s.drop.count(t.name)) continue;
    const auto shape = s.reshape.count(t.name) ? s.reshape.at(t.name) : t.shape;
    const DType dtype = s.retype.count(t.name) ? s.retype.at(t.name) : s.dtype;
    tensors[t.name] = PatternTensor(dtype, shape);
  }
  for (const auto& [name, t] : s.extra) tensors[name] = t;
  return tensors;
}

inline void WriteHfFolder(const std::string& dir, const FolderSpec& s) {
  std::filesystem::create_directories(dir);
  test_files::WriteFile(dir + "/config.json", Qwen3ConfigJson(s.config));
  const auto tensors = SpecTensors(s);
  if (s.shards <= 1) {
    WriteSafetensors(dir + "/model.safetensors", tensors);
    return;
  }
  std::vector<std::map<std::string, TensorData>> parts(static_cast<size_t>(s.shards));
  nlohmann::json index = {{"metadata", {{"total_size", 0}}},
                          {"weight_map", nlohmann::json::object()}};
  size_t i = 0;
  for (const auto& [name, t] : tensors) {
    const size_t shard = i++ % parts.size();
    parts[shard][name] = t;
    char file[64];
    std::snprintf(file, sizeof(file), "model-%05zu-of-%05d.safetensors", shard + 1, s.shards);
    index["weight_map"][name] = file;
  }
  for (size_t p = 0; p < parts.size(); ++p) {
    char file[64];
    std::snprintf(file, sizeof(file), "model-%05zu-of-%05d.safetensors", p + 1, s.shards);
    WriteSafetensors(dir + "/" + file, parts[p]);
  }
  test_files::WriteFile(dir + "/model.safetensors.index.json", index.dump(2));
}

}  // namespace dv::test
