// Golden run of the demo-shape synthetic model (preset qwen3-0.6b, seed 0: Qwen3-0.6B's shape,
// 28 layers, hidden 1024, 16/8 heads of 128, vocabulary 151936): its artifact bytes and the
// chains of a 32-step greedy run, on every execution path. The same chains come from DetLLM's
// own Python reference (IntQwen3 on its CPU reference backend, torch 2.15.0 CPU) run on the
// same artifact: they are not only detverify's record of itself. Label slow (the reference backend
// needs seconds at this shape); scripts/cross_test.sh leaves it out (qemu would need minutes).
// Changing any value below changes the integer semantics or the synthetic generator: that
// requires a spec-version bump (docs/SPEC.md), never an edit of these lines.
// Regenerate (after a bump) with:
//   detverify synth --preset qwen3-0.6b --seed 0 --out /tmp/s && sha256sum /tmp/s/model.safetensors
//   detverify generate --preset qwen3-0.6b --prompt-ids 1,2,3,4,5,6,7,8 --max-new 32 --json
//     --full-chains
// and compare with DetLLM's IntQwen3(...).generate on /tmp/s (docs/RESULTS.md, "Independent
// evidence").
#include <gtest/gtest.h>

#include "engine/generate.h"
#include "engine/model_source.h"
#include "tests/engine/test_support.h"

namespace dv {
namespace {

constexpr const char* kArtifactSha256 =
    "97532e48fd7bd0a5a48eeba178ea6d05fce0a8cc0fddd852847006487b381a02";
// Logits chain after each step (first 16 hex digits), then both chains in full.
const std::vector<std::string> kLogitsPerStep = {
    "cc968fe72f254992", "bc93bae9aa0c1618", "630ac4c80a4c996b", "82a5e89fa8ea7765",
    "61720a9ff8612e2c", "1050c9791c4eb65e", "c23ddef0ca37306a", "c3517ca6ebbc6ca0",
    "66153e9e0619bc09", "1411b9901a38680a", "32947735f77a9d2c", "032ec8a8c67ce184",
    "64c83d4baa66aeef", "abecd9572bb8372c", "5963790349876887", "404eebfc59a619b3",
    "6dd9dfe692b7b2ac", "47e9526811e32f6f", "71c6ea58e5fc8d3f", "72b8f3614200a76e",
    "4bdbadfd05812c60", "12274d3eed83014d", "4bc8dd8260a6f7d5", "3525c088591e1186",
    "0e2b2ba53f45622f", "5b946ecc89ebdfb7", "f4f8d73cf48fcf7a", "ca6f688d5672b083",
    "2fd962aeb41ab188", "b568caf4ebf253dd", "b04f3eefcd01d32d", "8bab903179899e90"};
constexpr const char* kLogitsChain =
    "8bab903179899e901af0f12fec1776ff7b007f85ca5c2294436563f52fe42d74";
constexpr const char* kTokenChain =
    "22084046c1a1f9e1d2da6501e7ff71ed9a8cb447af51b94e23e0c662c5498d4d";
const std::vector<int32_t> kTokens = {
    121869, 104822, 2479,  129737, 88132,  134236, 115641, 88918, 68387,  73000, 13668,
    107287, 147093, 49551, 35427,  145327, 61216,  19711,  43500, 147093, 21044, 147093,
    96903,  68330,  93537, 20397,  65992,  136036, 73000,  2479,  2479,   114518};

TEST(Golden06b, ArtifactBytesAndChainsOnEveryPath) {
  auto artifact = LoadSynthetic("qwen3-0.6b", 0);
  ASSERT_EQ(artifact->sha256(), kArtifactSha256) << "synthetic bytes changed";
  for (const auto& [name, backend] : test::EveryExecutionPath()) {
    IntQwen3 model(artifact->weights(), *backend);
    GenerationOptions opt;
    opt.max_new = static_cast<int64_t>(kLogitsPerStep.size());
    const auto res = GenerateGreedy(model, {{1, 2, 3, 4, 5, 6, 7, 8}}, opt);
    for (size_t s = 0; s < kLogitsPerStep.size(); ++s) {
      ASSERT_EQ(res[0].logits_chain[s].substr(0, 16), kLogitsPerStep[s])
          << name << ": logits chain departs at step " << s;
    }
    EXPECT_EQ(res[0].tokens, kTokens) << name;
    EXPECT_EQ(res[0].logits_chain.back(), kLogitsChain) << name;
    EXPECT_EQ(res[0].token_chain.back(), kTokenChain) << name;
    EXPECT_EQ(model.wrap_events(), 0) << name << ": the synthetic scales must not wrap int64";
  }
}

}  // namespace
}  // namespace dv
