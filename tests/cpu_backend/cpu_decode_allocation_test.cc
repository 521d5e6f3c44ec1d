// No allocation in the decode loop: once a row's first decode call has sized the buffers, a
// forward call of the cpu backend (GEMMs, row operations, attention, thread pool) and the greedy
// pick allocate nothing, and neither does GenerateGreedy's bookkeeping around them (the pick
// and both hash chains of every row, each step). Every allocation of this executable counts
// (tests/support/allocation_counter.h).
#include <gtest/gtest.h>

#include "engine/backends/cpu_backend.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/model_source.h"
#include "tests/support/allocation_counter.h"

namespace dv {
namespace {

TEST(CpuDecodeLoop, AllocatesNothing) {
  auto artifact = LoadSynthetic("qwen3-tiny", 0);
  const ModelConfig& c = artifact->weights().config;
  for (int threads : {1, 2}) {
    auto backend = MakeCpuBackend({threads, std::nullopt, true, std::nullopt, true});
    IntQwen3 model(artifact->weights(), *backend);
    constexpr int64_t kBatch = 3, kPrompt = 7, kSteps = 20;
    std::vector<std::unique_ptr<KvCache>> caches;
    std::vector<std::vector<int32_t>> logits;
    std::vector<int32_t> prompt(kPrompt, 5), next(kBatch, 0);
    std::vector<ForwardRow> rows;
    for (int64_t r = 0; r < kBatch; ++r) {
      caches.push_back(std::make_unique<KvCache>(c, kPrompt + kSteps, *backend));
      logits.emplace_back(static_cast<size_t>(c.vocab));
      rows.push_back({caches.back().get(), prompt.data(), kPrompt, logits.back().data(), nullptr});
    }
    model.Forward(rows);  // prefill
    for (int64_t r = 0; r < kBatch; ++r) {
      rows[static_cast<size_t>(r)].ids = &next[static_cast<size_t>(r)];
      rows[static_cast<size_t>(r)].n_tokens = 1;
    }
    model.Forward(rows);  // the first decode call may size buffers
    const int64_t before = test::AllocationsSoFar();
    for (int64_t s = 1; s < kSteps; ++s) {
      for (int64_t r = 0; r < kBatch; ++r) {
        next[static_cast<size_t>(r)] = model.GreedyPick(logits[static_cast<size_t>(r)].data());
      }
      model.Forward(rows);
    }
    EXPECT_EQ(test::AllocationsSoFar() - before, 0) << threads << " threads";
  }
}

// GenerateGreedy from its third step to its last: every step of every row is picked, hashed
// twice and recorded without an allocation (the hex digests are written once generation ends).
TEST(CpuDecodeLoop, GenerateAllocatesNothingPerStep) {
  auto artifact = LoadSynthetic("qwen3-tiny", 0);
  for (int threads : {1, 2}) {
    auto backend = MakeCpuBackend({threads, std::nullopt, true, std::nullopt, true});
    IntQwen3 model(artifact->weights(), *backend);
    const std::vector<std::vector<int32_t>> prompts = {{1, 2, 3}, {4, 5, 6, 7, 8}, {9}};
    GenerationOptions options;
    options.max_new = 24;
    int64_t at_step2 = -1, at_last = -1, callbacks = 0;
    const auto results =
        GenerateGreedy(model, prompts, options, [&](size_t row, int64_t step, int64_t steps) {
          ++callbacks;
          if (row == 0 && step == 2) at_step2 = test::AllocationsSoFar();
          if (row == prompts.size() - 1 && step == steps - 1) at_last = test::AllocationsSoFar();
        });
    ASSERT_EQ(callbacks, 3 * options.max_new);
    ASSERT_GE(at_step2, 0);
    EXPECT_EQ(at_last - at_step2, 0) << threads << " threads";
    for (const RowResult& r : results) {
      ASSERT_EQ(r.logits_chain.size(), static_cast<size_t>(options.max_new));
      ASSERT_EQ(r.token_chain.size(), static_cast<size_t>(options.max_new));
    }
  }
}

}  // namespace
}  // namespace dv
