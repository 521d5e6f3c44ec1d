// Hostile but loadable artifacts: every shift at the edge of the loader's range
// (kMaxArtifactShift), or every mantissa, smoothing multiplier, gamma and RoPE entry at the
// edges of the ranges CheckValueRanges admits. Such a model computes nonsense, but every
// execution path must compute the same nonsense -- the same logits, or the same refusal where a
// call would divide by zero -- without undefined behaviour: the UBSan build
// (scripts/ubsan_test.sh, in CI) runs this test and aborts on the first signed overflow, bad
// shift or misaligned access. One past an edge, the loader refuses the artifact
// (test_artifact.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/file_io.h"
#include "engine/artifact.h"
#include "engine/generate.h"
#include "engine/synth.h"
#include "tests/engine/test_support.h"
#include "tests/support/scratch_files.h"

namespace dv {
namespace {

enum class Edge { kMaxShifts, kMinShifts, kRangeEdges };

bool IsShiftName(const std::string& name) {
  return name == "embed.k" || name.ends_with(".kq_k") || name.ends_with(".ks_k") ||
         name.ends_with(".vq_k");
}

// The two ends of the range CheckValueRanges admits for a mantissa-like tensor, or {0, 0}.
std::pair<int64_t, int64_t> RangeEdges(const std::string& name) {
  constexpr int64_t kMant = (int64_t{1} << 16) - 1, kMult = int64_t{1} << 14;
  if (name.ends_with("_norm.m")) return {1 - kMult, kMult - 1};
  for (const char* multiplier : {".as_m", ".ms_m", ".ds_m", ".os_m", ".qs_m"}) {
    if (name.ends_with(multiplier)) return {1, kMult};
  }
  if (name.ends_with(".m") || name.ends_with("_m")) return {1, kMant};
  return {0, 0};
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
  if (edge != Edge::kRangeEdges) SetConfigShifts(config, shift);
  for (auto& [name, t] : a.tensors) {
    if (t.dtype != DType::kI64) continue;
    const int64_t n = static_cast<int64_t>(t.bytes.size()) / 8;
    std::vector<int64_t> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      values[static_cast<size_t>(i)] = ReadLeInt(&t.bytes[static_cast<size_t>(8 * i)], 8);
    bool changed = false;
    for (int64_t i = 0; i < n; ++i) {
      int64_t& v = values[static_cast<size_t>(i)];
      if (edge != Edge::kRangeEdges && IsShiftName(name)) {
        // kq_k follows the config's sign: k_rowk - kq_k past 63 would wrap the K-cache
        // denominator to 0, which the loader refuses. (At +4096 the V-cache denominator
        // vq_m << (xk + v.k - vq_k) wraps for every token, so that variant ends in the
        // division-by-zero refusal on every path; the others compute.)
        v = name.ends_with(".kq_k") || i % 2 == 0 ? shift : -shift;
        changed = true;
      } else if (edge == Edge::kRangeEdges && RangeEdges(name).first != RangeEdges(name).second) {
        const auto [lo, hi] = RangeEdges(name);
        v = i % 2 == 0 ? hi : lo;
        changed = true;
      }
    }
    if (changed) t = MakeTensor(DType::kI64, t.shape, values);
  }
  if (edge == Edge::kRangeEdges) {
    for (const char* rope : {"rope.cos", "rope.sin"}) {
      TensorData& t = a.tensors.at(rope);
      for (size_t i = 0; i + 1 < t.bytes.size(); i += 2) {
        const bool low = (i / 2) % 2 == 0;
        t.bytes[i] = 0x00;
        t.bytes[i + 1] = low ? 0xc0 : 0x40;  // -2^14, 2^14 (little-endian int16)
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
  std::string first_name, first_refusal;
  bool have_first = false;
  for (const auto& [name, backend] : test::EveryExecutionPath()) {
    IntQwen3 model(artifact->weights(), *backend);
    std::vector<RowResult> got;
    std::string refusal;
    try {
      got = GenerateGreedy(model, rows, options);
    } catch (const ArithmeticError& e) {
      refusal = e.what();  // a division by zero: every path must refuse it alike
    }
    if (!have_first) {
      have_first = true;
      first = got;
      first_name = name;
      first_refusal = refusal;
      continue;
    }
    ASSERT_EQ(refusal, first_refusal) << name << " vs " << first_name;
    if (!refusal.empty()) continue;
    for (size_t r = 0; r < rows.size(); ++r) {
      for (size_t s = 0; s < got[r].logits.size(); ++s) {
        ASSERT_EQ(got[r].logits[s], first[r].logits[s])
            << name << " vs " << first_name << ": row " << r << " step " << s;
      }
      EXPECT_EQ(got[r].logits_chain, first[r].logits_chain) << name;
    }
  }
  ASSERT_TRUE(have_first);
  // Which way it went, so a variant that stops computing is visible.
  const bool refused = !first_refusal.empty();
  EXPECT_EQ(refused, GetParam() == Edge::kMaxShifts) << first_refusal;
}

INSTANTIATE_TEST_SUITE_P(Edges, HostileArtifact,
                         ::testing::Values(Edge::kMaxShifts, Edge::kMinShifts, Edge::kRangeEdges),
                         [](const ::testing::TestParamInfo<Edge>& param) {
                           switch (param.param) {
                             case Edge::kMaxShifts:
                               return std::string("MaxShifts");
                             case Edge::kMinShifts:
                               return std::string("MinShifts");
                             case Edge::kRangeEdges:
                               return std::string("RangeEdges");
                           }
                           return std::string("Unknown");
                         });

}  // namespace
}  // namespace dv
