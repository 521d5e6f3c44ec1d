// Hostile but loadable artifacts: every shift at the edge of the loader's range
// (kMaxArtifactShift), every mantissa at the int64 extremes, RoPE entries at the int16 extremes.
// Such a model computes nonsense, but the forward pass must compute the same nonsense on every
// execution path, without undefined behaviour: the UBSan build (scripts/ubsan_test.sh, in CI)
// runs this test and aborts on the first signed overflow, bad shift or misaligned access. One
// past the edge, the loader refuses the artifact (test_artifact.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "engine/artifact.h"
#include "engine/generate.h"
#include "engine/synth.h"
#include "tests/engine/test_support.h"
#include "tests/support/scratch_files.h"

namespace dv {
namespace {

enum class Edge { kMaxShifts, kMinShifts, kExtremeMantissas };

bool IsShiftName(const std::string& name) {
  return name == "embed.k" || name.ends_with(".kq_k") || name.ends_with(".ks_k") ||
         name.ends_with(".vq_k");
}

bool IsMantissaName(const std::string& name) {
  return name.ends_with(".m") || name.ends_with("_m");
}

// Every config.json shift ("k" and "*_k" keys) set to `value`.
void SetConfigShifts(nlohmann::json& j, int64_t value) {
  if (j.is_object()) {
    for (auto& [key, item] : j.items()) {
      if (item.is_number_integer() && (key == "k" || key.ends_with("_k"))) {
        item = value;
      } else {
        SetConfigShifts(item, value);
      }
    }
  } else if (j.is_array()) {
    for (auto& item : j) SetConfigShifts(item, value);
  }
}

// The qwen3-tiny synthetic artifact pushed to `edge`, written into `dir`.
void WriteHostileArtifact(Edge edge, const std::string& dir) {
  SynthArtifact a = MakeSynthArtifact(FindSynthPreset("qwen3-tiny"), 5);
  nlohmann::json config = nlohmann::json::parse(a.config_json);
  const int64_t shift = edge == Edge::kMinShifts ? -kMaxArtifactShift : kMaxArtifactShift;
  if (edge != Edge::kExtremeMantissas) SetConfigShifts(config, shift);
  for (auto& [name, t] : a.tensors) {
    if (t.dtype != DType::kI64) continue;
    const int64_t n = static_cast<int64_t>(t.bytes.size()) / 8;
    std::vector<int64_t> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = ReadLeInt(&t.bytes[static_cast<size_t>(8 * i)], 8);
    bool changed = false;
    for (int64_t i = 0; i < n; ++i) {
      int64_t& v = values[static_cast<size_t>(i)];
      if (edge != Edge::kExtremeMantissas && IsShiftName(name)) {
        v = i % 2 == 0 ? shift : -shift;
        changed = true;
      } else if (edge == Edge::kExtremeMantissas && IsMantissaName(name)) {
        v = i % 3 == 0 ? INT64_MAX : i % 3 == 1 ? INT64_MIN : -1;
        changed = true;
      }
    }
    if (changed) t = MakeTensor(DType::kI64, t.shape, values);
  }
  if (edge == Edge::kExtremeMantissas) {
    for (const char* rope : {"rope.cos", "rope.sin"}) {
      TensorData& t = a.tensors.at(rope);
      for (size_t i = 0; i + 1 < t.bytes.size(); i += 2) {
        const bool low = (i / 2) % 2 == 0;
        t.bytes[i] = low ? 0x00 : 0xff;
        t.bytes[i + 1] = low ? 0x80 : 0x7f;  // -32768, 32767
      }
    }
  }
  std::filesystem::create_directories(dir);
  WriteSafetensors(dir + "/model.safetensors", a.tensors);
  WriteFileAtomic(dir + "/config.json", config.dump());
}

class HostileArtifact : public ::testing::TestWithParam<Edge> {};

TEST_P(HostileArtifact, EveryExecutionPathComputesTheSameWithoutUndefinedBehaviour) {
  test_files::ScratchDir dir("hostile");
  WriteHostileArtifact(GetParam(), dir.File("artifact"));
  const auto artifact = Artifact::Load(dir.File("artifact"));
  const std::vector<std::vector<int32_t>> rows = {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {500, 7}};
  GenerationOptions options;
  options.max_new = 6;
  options.split = 3;
  options.keep_logits = true;
  std::vector<RowResult> first;
  std::string first_name;
  for (const auto& [name, backend] : test::EveryExecutionPath()) {
    IntQwen3 model(artifact->weights(), *backend);
    const std::vector<RowResult> got = GenerateGreedy(model, rows, options);
    if (first.empty()) {
      first = got;
      first_name = name;
      continue;
    }
    for (size_t r = 0; r < rows.size(); ++r) {
      for (size_t s = 0; s < got[r].logits.size(); ++s) {
        ASSERT_EQ(got[r].logits[s], first[r].logits[s])
            << name << " vs " << first_name << ": row " << r << " step " << s;
      }
      EXPECT_EQ(got[r].logits_chain, first[r].logits_chain) << name;
    }
  }
  ASSERT_FALSE(first.empty());
}

INSTANTIATE_TEST_SUITE_P(Edges, HostileArtifact,
                         ::testing::Values(Edge::kMaxShifts, Edge::kMinShifts,
                                           Edge::kExtremeMantissas),
                         [](const ::testing::TestParamInfo<Edge>& param) {
                           switch (param.param) {
                             case Edge::kMaxShifts:
                               return std::string("MaxShifts");
                             case Edge::kMinShifts:
                               return std::string("MinShifts");
                             case Edge::kExtremeMantissas:
                               return std::string("ExtremeMantissas");
                           }
                           return std::string("Unknown");
                         });

}  // namespace
}  // namespace dv
