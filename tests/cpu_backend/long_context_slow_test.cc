// Determinism at a 4,096-token context on Qwen3-0.6B's shapes (the synthetic qwen3-0.6b preset):
// our row's prompt fills the context up to its last generated step, and every step's int32
// logits must be the same on every path --
//   the reference backend, the whole prompt in one call (the values the others must give);
//   the cpu backend, the whole prompt in one call (best ISA level);
//   the cpu backend's other ISA levels, decoding the last steps over a cache of the prompt
//   that the best level filled (their attention kernels over 4k slots);
//   the cpu backend, batch 8: our row among 7 random co-prompts of 1,024 to 3,072 tokens;
//   the cpu backend, split prefill: 3,584 tokens in one call, then one token per call;
//   the cpu backend, token by token from the first token.
// The founding project checks determinism at a 4k context too. Label slow: the reference
// backend's prefill of 4,089 tokens and the token-by-token path take minutes (docs/RESULTS.md,
// "the 4k determinism test").
#include <chrono>
#include <cstdio>

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

// Prints how long each path took (the test runs for minutes; its log says where the time went).
class PathClock {
 public:
  void Lap(const std::string& path) {
    const auto now = std::chrono::steady_clock::now();
    std::printf("[ 4k      ] %s: %.1f s\n", path.c_str(),
                std::chrono::duration<double>(now - last_).count());
    std::fflush(stdout);
    last_ = now;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

TEST(LongContext, Context4096EveryPathEveryStep) {
  const std::unique_ptr<Artifact> artifact = LoadSynthetic("qwen3-0.6b", 0);
  const Artifact& a = *artifact;
  const int64_t vocab = a.weights().config.vocab;
  const std::vector<int32_t> prompt = LongPrompt(vocab);
  const Case solo{{prompt}, kSteps, 0};
  PathClock clock;
  const auto& want = ReferenceResult("4k", a, solo);
  clock.Lap("reference, whole prompt");
  ASSERT_EQ(want[0].logits.size(), static_cast<size_t>(kSteps));

  auto cpu = MakeCpuBackend({0, BestCpuIsa(), true, std::nullopt, true});
  ExpectSameSteps(want, Generate(a, *cpu, solo), "4k b1 whole prompt");
  clock.Lap("cpu/" + std::string(CpuIsaName(BestCpuIsa())) + ", whole prompt");

  // The other ISA levels decode over a cache the best level filled with the prompt but its last
  // token, in one call (one cache per level, all in that call). Their attention
  // kernels then run over 4,089 to 4,096 slots, which is what a long context adds for them.
  std::vector<CpuIsa> others;
  for (CpuIsa isa : SupportedCpuIsas()) {
    if (isa != BestCpuIsa() && CpuSupports(isa)) others.push_back(isa);
  }
  {
    IntQwen3 best(a.weights(), *cpu);
    std::vector<std::unique_ptr<KvCache>> caches;
    std::vector<ForwardRow> rows;
    for (size_t i = 0; i < others.size(); ++i) {
      caches.push_back(std::make_unique<KvCache>(a.weights().config, kContext, *cpu));
      rows.push_back({caches.back().get(), prompt.data(), kPromptTokens - 1, nullptr, nullptr});
    }
    if (!rows.empty()) best.Forward(rows);
    for (size_t i = 0; i < others.size(); ++i) {
      auto backend = MakeCpuBackend({0, others[i], true, std::nullopt, true});
      IntQwen3 model(a.weights(), *backend);
      std::vector<int32_t> logits(static_cast<size_t>(vocab));
      int32_t id = prompt.back();
      for (int64_t step = 0; step < kSteps; ++step) {
        ForwardRow row{caches[i].get(), &id, 1, logits.data(), nullptr};
        model.Forward({&row, 1});
        const std::string what =
            "4k decode on " + std::string(CpuIsaName(others[i])) + ", step " + std::to_string(step);
        ASSERT_TRUE(SameBits(want[0].logits[static_cast<size_t>(step)], logits)) << what;
        id = model.GreedyPick(logits.data());
        ASSERT_EQ(id, want[0].tokens[static_cast<size_t>(step)]) << what;
      }
    }
  }
  clock.Lap("cpu, the other ISA levels' decode steps");

  const CoPromptSpec spec{
      .seed = 4096, .count = 7, .min_len = 1024, .max_len = 3072, .min_id = 0, .max_id = vocab - 1};
  constexpr size_t kOurs = 3;
  const Case batch{ComposeBatch(prompt, MakeCoPrompts(spec, vocab), kOurs), kSteps, 0};
  ASSERT_EQ(batch.rows[kOurs], prompt);
  const auto b8 = Generate(a, *cpu, batch);
  ExpectSameSteps(want, {b8[kOurs]}, "4k batch 8, row 3");
  clock.Lap("cpu, batch 8");
  ExpectSameSteps(want, Generate(a, *cpu, {{prompt}, kSteps, 3584}), "4k split 3584");
  clock.Lap("cpu, split prefill 3584");
  ExpectSameSteps(want, Generate(a, *cpu, {{prompt}, kSteps, 1}), "4k token by token");
  clock.Lap("cpu, token by token");
}

}  // namespace
}  // namespace dv::test
