// Synthetic artifacts: integer RoPE tables agree with float trigonometry, and the synthetic
// models are alive (greedy decoding wanders, logits stay far from int32 saturation).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "engine/artifact.h"
#include "engine/backends/reference_backend.h"
#include "engine/generate.h"
#include "engine/model_source.h"
#include "engine/synth.h"
#include "tests/engine/alive_check.h"

namespace dv {
namespace {

// Integer CORDIC in 128-bit Q60 is exact to ~1e-15, so only float ties at x.5 could differ
// from round(cos * 2^14) of double precision: allow 1 unit, require nearly all exact.
constexpr int64_t kMaxRopeUnitError = 1;

TEST(IntegerRope, MatchesFloatTablesOfQwen3Shape) {
  const int64_t max_pos = 4096, d = 128;
  std::vector<int64_t> c, s;
  IntegerRopeTables(max_pos, d, c, s);
  int64_t mismatches = 0;
  for (int64_t pos = 0; pos < max_pos; ++pos) {
    for (int64_t j = 0; j < d; ++j) {
      const double inv_freq =
          std::pow(1e6, -2.0 * static_cast<double>(j % (d / 2)) / static_cast<double>(d));
      const double ang = static_cast<double>(pos) * inv_freq;
      const auto fc = static_cast<int64_t>(std::llround(std::cos(ang) * 16384.0));
      const auto fs = static_cast<int64_t>(std::llround(std::sin(ang) * 16384.0));
      const size_t i = static_cast<size_t>(pos * d + j);
      ASSERT_LE(std::llabs(c[i] - fc), kMaxRopeUnitError) << "cos pos " << pos << " j " << j;
      ASSERT_LE(std::llabs(s[i] - fs), kMaxRopeUnitError) << "sin pos " << pos << " j " << j;
      mismatches += (c[i] != fc) + (s[i] != fs);
    }
  }
  // Float rounding of the angle itself grows with pos*inv_freq; a handful of off-by-one ties.
  EXPECT_LT(mismatches, max_pos * d / 1000);
}

TEST(SynthArtifact, SameSeedSameBytesDifferentSeedDifferentBytes) {
  const auto& p = FindSynthPreset("qwen3-tiny");
  const SynthArtifact a = MakeSynthArtifact(p, 3), b = MakeSynthArtifact(p, 3),
                      c = MakeSynthArtifact(p, 4);
  EXPECT_EQ(a.config_json, b.config_json);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : a.tensors) EXPECT_EQ(t.bytes, b.tensors.at(name).bytes) << name;
  EXPECT_NE(a.tensors.at("embed.e8").bytes, c.tensors.at("embed.e8").bytes);
}

TEST(SynthArtifact, UnknownPresetNamesTheKnownOnes) {
  try {
    FindSynthPreset("qwen3-7b");
    FAIL();
  } catch (const ArtifactError& e) {
    EXPECT_NE(std::string(e.what()).find("qwen3-tiny, qwen3-0.6b"), std::string::npos) << e.what();
  }
}

TEST(SynthAlive, QwenTiny256Steps) { test::ExpectAlive("qwen3-tiny", 256); }

}  // namespace
}  // namespace dv
