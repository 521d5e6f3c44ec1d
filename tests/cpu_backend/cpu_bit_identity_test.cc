// Whole-model bit identity of the cpu backend: every step's int32 logits equal the reference
// backend's, at every ISA level this CPU supports (forced through CpuBackendOptions, as
// DETVERIFY_CPU_ISA does) and thread counts 1..4, for
//   - the DetLLM fixtures tiny-a (W1 rows), tiny-w2 (W2 rows) and tiny-w2b (W2 rows whose
//     residual add shifts by 64 or more), whose chains also equal DetLLM's published ones,
//   - the synthetic preset qwen3-tiny (qwen3-0.6b: cpu_bit_identity_06b_test.cc, label slow),
//   - odd shapes (hidden, head and vocabulary sizes off every kernel's block size),
// alone, in batches with co-prompts, with split prefill and token by token.
#include "tests/cpu_backend/cpu_bit_identity.h"

namespace dv::test {
namespace {

TEST_P(CpuBitIdentity, DetllmFixturesEveryStep) {
  for (const std::string& name : kDetllmFixtures) {
    const Artifact& a = Fixture(name);
    const auto expected = test::LoadJson(test::FixtureDir(name) + "/expected.json");
    const auto prompt = expected["prompt_ids"].get<std::vector<int32_t>>();
    const int64_t steps = expected["steps"].get<int64_t>();
    // DetLLM's own chains first (the reference reproduces them, so must the cpu backend) ...
    for (int threads : {1, 2, 3, 4}) {
      auto cpu = MakeCpuBackend({threads, GetParam(), true, std::nullopt, true});
      const auto res = Generate(a, *cpu, {{prompt}, steps, 0});
      const auto& per_step = expected["chains"]["logits"]["per_step"];
      ASSERT_EQ(res[0].logits_chain.size(), per_step.size());
      for (size_t s = 0; s < per_step.size(); ++s) {
        ASSERT_EQ(res[0].logits_chain[s].substr(0, 16), per_step[s].get<std::string>())
            << name << ", " << threads << " threads: logits chain departs at step " << s;
      }
    }
    // ... then every step's logits against the reference: alone, with the fixture's split
    // prefill, token by token, and in the fixture's batch.
    const int64_t split = expected["checks"]["split_prefill"]["prefill_tokens"].get<int64_t>();
    ExpectEveryThreadCountMatches(name, a, {{prompt}, steps, 0}, GetParam());
    ExpectEveryThreadCountMatches(name + " split", a, {{prompt}, steps, split}, GetParam());
    ExpectEveryThreadCountMatches(name + " token by token", a, {{prompt}, steps, 1}, GetParam());
    std::vector<std::vector<int32_t>> rows;
    for (const auto& row : expected["batch"]["row_layout"]) {
      rows.push_back(row.value("is_fixture_prompt", false)
                         ? prompt
                         : row["prompt_ids"].get<std::vector<int32_t>>());
    }
    ExpectEveryThreadCountMatches(name + " batch", a, {rows, steps, 0}, GetParam());
  }
}

// The wrap events of each fixture's recorded run, by site (tests/data/detllm/README.md).
TEST_P(CpuBitIdentity, DetllmFixturesWrapEventsBySite) {
  struct Count {
    const char* fixture;
    int64_t w1, w2;
  };
  for (const Count& want :
       {Count{"tiny-a", 16, 0}, Count{"tiny-w2", 0, 19}, Count{"tiny-w2b", 0, 15}}) {
    const auto expected = test::LoadJson(test::FixtureDir(want.fixture) + "/expected.json");
    for (int threads : {1, 3}) {
      auto cpu = MakeCpuBackend({threads, GetParam(), true, std::nullopt, true});
      IntQwen3 model(Fixture(want.fixture).weights(), *cpu);
      GenerationOptions opt;
      opt.max_new = expected["steps"].get<int64_t>();
      GenerateGreedy(model, {expected["prompt_ids"].get<std::vector<int32_t>>()}, opt);
      EXPECT_EQ(model.wrap_events_by_site().q_quant, want.w1) << want.fixture;
      EXPECT_EQ(model.wrap_events_by_site().down_input, want.w2) << want.fixture;
      EXPECT_EQ(model.wrap_events_by_site().other, 0) << want.fixture;
      EXPECT_EQ(model.wrap_events(), want.w1 + want.w2) << want.fixture;
    }
  }
}

TEST_P(CpuBitIdentity, SyntheticTinyEveryStep) {
  const Artifact& a = Synthetic("qwen3-tiny");
  const std::vector<int32_t> prompt = {11, 48, 85, 122, 159, 196, 233, 270, 307, 344, 381, 418};
  ExpectEveryThreadCountMatches("tiny", a, {{prompt}, 40, 0}, GetParam());
  ExpectEveryThreadCountMatches("tiny batch 8", a, {Batch(prompt, 7, 1024, 99, 3), 24, 0},
                                GetParam());
  ExpectEveryThreadCountMatches("tiny batch 8 split", a, {Batch(prompt, 7, 1024, 7, 6), 16, 4},
                                GetParam());
}

TEST_P(CpuBitIdentity, OddShapesEveryStep) {
  for (const std::string name : {"odd-a", "odd-b", "odd-c"}) {
    const Artifact& a = Odd(name);
    const int64_t vocab = a.weights().config.vocab;
    const std::vector<int32_t> prompt = {1, 5, 9, 13, 17, 21, 25, 29, 33};
    ExpectEveryThreadCountMatches(name, a, {{prompt}, 20, 0}, GetParam());
    ExpectEveryThreadCountMatches(name + " batch", a, {Batch(prompt, 4, vocab, 3, 2), 12, 3},
                                  GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, CpuBitIdentity, ::testing::ValuesIn(IsasUnderTest()),
                         IsaParamName);

}  // namespace
}  // namespace dv::test
