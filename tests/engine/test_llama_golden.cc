// The no-QK-Norm (Llama) variant, detllm-v1-llama (docs/SPEC.md §9), on a committed artifact:
// tests/data/llama/llama-tiny-int, the Llama GGUF fixture prepared with the built-in calibration
// (4 x 64 random ids). Its chains were produced by the reference backend on x86-64 and are pinned
// here; scripts/cross_test.sh runs this test for aarch64 and big-endian s390x under qemu-user,
// where every execution path must give the same bits. tests/cpu_backend/llama_variant_test.cc
// checks that prepare still writes these bytes from the GGUF.
// Regenerate (after a spec bump of the variant) with:
//   detverify prepare --gguf tests/data/gguf/llama_tiny.gguf --calib-samples 4 --calib-len 64
//     --out tests/data/llama/llama-tiny-int   (then remove its tokenizer.gguf)
//   detverify generate --artifact tests/data/llama/llama-tiny-int
//     --prompt-ids 3,14,15,9,26,5,35,8,9,7,9,3 --max-new 32 --json
#include <gtest/gtest.h>

#include "engine/artifact.h"
#include "engine/generate.h"
#include "tests/engine/test_support.h"

namespace dv {
namespace {

constexpr const char* kSha256 = "1f0473266982871deafe5ecf76e18c1a762645300a6d962846796fd0ac9a7508";
constexpr const char* kLogitsChain =
    "f6bf6f2fd9c78391913893c1431c9540ca85a592a1f534ca761e550a3ade9bb2";
constexpr const char* kTokenChain =
    "bc743f60a27257f0662c8af2adaa795642fc636998d3bb63a3f9b6e82b7b4551";

TEST(LlamaGolden, EveryExecutionPathGivesThePinnedChains) {
  const auto artifact = Artifact::Load(test::DataDir() + "/llama/llama-tiny-int");
  ASSERT_EQ(artifact->sha256(), kSha256);
  ASSERT_FALSE(artifact->weights().config.qk_norm);
  EXPECT_STREQ(SpecVersionOf(artifact->weights().config), "detllm-v1-llama");
  for (const auto& [name, backend] : test::EveryExecutionPath()) {
    IntQwen3 model(artifact->weights(), *backend);
    GenerationOptions opt;
    opt.max_new = 32;
    for (const int64_t split : {0, 5}) {
      opt.split = split;
      const auto res = GenerateGreedy(model, {{3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9, 3}}, opt);
      EXPECT_EQ(res[0].logits_chain.back(), kLogitsChain) << name << ", split " << split;
      EXPECT_EQ(res[0].token_chain.back(), kTokenChain) << name << ", split " << split;
    }
  }
}

}  // namespace
}  // namespace dv
