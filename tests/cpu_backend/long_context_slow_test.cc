// Determinism at a 4,096-token context on Qwen3-0.6B's shapes (the synthetic qwen3-0.6b preset):
// our row's prompt fills the context up to its last generated step, and every step's int32
// logits must be the same on every path --
//   the reference backend, the whole prompt in one call (the values the others must give);
//   the cpu backend, the whole prompt in one call, at every ISA level this machine has;
//   the cpu backend, batch 8: our row among 7 random co-prompts of 1,024 to 3,072 tokens;
//   the cpu backend, split prefill: 2,048 tokens in one call, then one token per call;
//   the cpu backend, token by token from the first token.
// The founding project checks determinism at a 4k context too. Label slow: the reference
// backend's prefill of 4,089 tokens and the token-by-token path take minutes (docs/RESULTS.md,
// "the 4k determinism test").
#include "tests/cpu_backend/cpu_bit_identity.h"

namespace dv::test {
namespace {

constexpr int64_t kContext = 4096;
constexpr int64_t kSteps = 8;
// Step 0 is the prompt's last position and each later step feeds one token, so the last step
// sees kContext slots.
constexpr int64_t kPromptTokens = kContext - kSteps + 1;

// Our prompt: deterministic ids over the whole vocabulary (SplitMix64).
std::vector<int32_t> LongPrompt(int64_t vocab) {
  TestRng rng(4096);
  std::vector<int32_t> ids(static_cast<size_t>(kPromptTokens));
  for (auto& id : ids) id = static_cast<int32_t>(rng.Uniform(0, vocab - 1));
  return ids;
}

TEST(LongContext, Context4096EveryPathEveryStep) {
  const std::unique_ptr<Artifact> artifact = LoadSynthetic("qwen3-0.6b", 0);
  const Artifact& a = *artifact;
  const int64_t vocab = a.weights().config.vocab;
  const std::vector<int32_t> prompt = LongPrompt(vocab);
  const Case solo{{prompt}, kSteps, 0};
  const auto& want = ReferenceResult("4k", a, solo);
  ASSERT_EQ(want[0].logits.size(), static_cast<size_t>(kSteps));

  for (CpuIsa isa : SupportedCpuIsas()) {
    auto cpu = MakeCpuBackend({0, isa, true});
    ExpectSameSteps(want, Generate(a, *cpu, solo), "4k b1 " + std::string(CpuIsaName(isa)));
  }

  auto cpu = MakeCpuBackend({0, BestCpuIsa(), true});
  CoPromptSpec spec;
  spec.seed = 4096;
  spec.count = 7;
  spec.min_len = 1024;
  spec.max_len = 3072;
  spec.min_id = 0;
  spec.max_id = vocab - 1;
  constexpr size_t kOurs = 3;
  const Case batch{ComposeBatch(prompt, MakeCoPrompts(spec, vocab), kOurs), kSteps, 0};
  ASSERT_EQ(batch.rows[kOurs], prompt);
  const auto b8 = Generate(a, *cpu, batch);
  ExpectSameSteps(want, {b8[kOurs]}, "4k batch 8, row 3");

  ExpectSameSteps(want, Generate(a, *cpu, {{prompt}, kSteps, 2048}), "4k split 2048");
  ExpectSameSteps(want, Generate(a, *cpu, {{prompt}, kSteps, 1}), "4k token by token");
}

}  // namespace
}  // namespace dv::test
