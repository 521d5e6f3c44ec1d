// Golden hashes of fixed synthetic runs, produced by the reference backend and pinned here.
// They hold on every platform (synthetic bytes come from integer code; logits are integer):
// scripts/cross_test.sh runs this test for aarch64 and big-endian s390x under qemu-user, where the
// synthetic artifact is synthesized by that architecture's own binary.
// Changing any value below changes the integer semantics or the synthetic generator: that
// requires a spec-version bump (docs/SPEC.md), never an edit of these lines.
// Regenerate (after a bump) with:
//   detverify synth --preset qwen3-tiny --seed 0 --out /tmp/t && sha256sum /tmp/t/model.safetensors
//   detverify generate --preset qwen3-tiny --seed 0 --prompt-ids 1,2,3,4,5,6,7,8 --max-new 64
//   --json
#include <gtest/gtest.h>

#include "engine/generate.h"
#include "engine/model_source.h"
#include "tests/engine/test_support.h"

namespace dv {
namespace {

struct Golden {
  const char* preset;
  const char* artifact_sha256;
  int64_t steps;
  const char* logits_chain;
  const char* token_chain;
};

// The chains depend on the prompt 1..8 below.
constexpr Golden kGoldens[] = {
    {"qwen3-tiny", "b0b408ef285842b3942574761d352a9565812e5b563f8fd94d8ff99ec6f29748", 64,
     "ad39b0272a47c6fc9bedfe006995fc3fd83de9e70b3c652445b2bddf0d288539",
     "fd16f41860c31ac800447236ca0b64c23bede8d4d82a2799e4b03d0b313388b3"},
};

// gtest prints the parameter in test names; the preset says which one.
void PrintTo(const Golden& golden, std::ostream* os) { *os << golden.preset; }

class GoldenTest : public ::testing::TestWithParam<Golden> {};

TEST_P(GoldenTest, ArtifactBytesAndChains) {
  const Golden& g = GetParam();
  auto artifact = LoadSynthetic(g.preset, 0);
  EXPECT_EQ(artifact->sha256(), g.artifact_sha256) << "synthetic bytes changed";
  for (const auto& [name, backend] : test::EveryExecutionPath()) {
    IntQwen3 model(artifact->weights(), *backend);
    GenerationOptions opt;
    opt.max_new = g.steps;
    const auto res = GenerateGreedy(model, {{1, 2, 3, 4, 5, 6, 7, 8}}, opt);
    EXPECT_EQ(res[0].logits_chain.back(), g.logits_chain) << name;
    EXPECT_EQ(res[0].token_chain.back(), g.token_chain) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Synthetic, GoldenTest, ::testing::ValuesIn(kGoldens),
                         [](const auto& param_info) {
                           std::string n = param_info.param.preset;
                           for (char& c : n) c = (c == '-' || c == '.') ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace dv
