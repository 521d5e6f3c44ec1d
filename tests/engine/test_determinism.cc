// The determinism suite: exact equality of every step's int32 logits across runs, batch
// compositions (our row among random co-prompts, at several positions), prefill/decode splits
// and backends/thread counts. No tolerances: integer results admit none.
#include <gtest/gtest.h>

#include "engine/backends/backend_registry.h"
#include "engine/co_prompts.h"
#include "engine/generate.h"
#include "engine/model_source.h"

namespace dv {
namespace {

const std::vector<int32_t> kPrompt = {11,  48,  85,  122, 159, 196, 233, 270, 307, 344,
                                      381, 418, 455, 492, 17,  54,  91,  128, 165};
constexpr int64_t kSteps = 48;

class Determinism : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { artifact_ = LoadSynthetic("qwen3-tiny", 0).release(); }
  static void TearDownTestSuite() { delete artifact_; }

  static RowResult Run(const std::vector<std::vector<int32_t>>& rows, size_t ours, int64_t split,
                       const std::string& backend = "reference", int threads = 0) {
    BackendOptions bo;
    bo.threads = threads;
    auto b = MakeBackend(backend, bo);
    IntQwen3 model(artifact_->weights(), *b);
    GenerationOptions opt;
    opt.max_new = kSteps;
    opt.split = split;
    opt.keep_logits = true;
    return GenerateGreedy(model, rows, opt)[ours];
  }

  // Exact equality of every step's logits and token; reports the first divergent step.
  static void ExpectIdentical(const RowResult& a, const RowResult& b, const std::string& what) {
    ASSERT_EQ(a.logits.size(), b.logits.size()) << what;
    for (size_t s = 0; s < a.logits.size(); ++s) {
      ASSERT_EQ(a.logits[s], b.logits[s]) << what << ": logits differ at step " << s;
      ASSERT_EQ(a.tokens[s], b.tokens[s]) << what << ": token differs at step " << s;
    }
    EXPECT_EQ(a.logits_chain.back(), b.logits_chain.back()) << what;
  }

  static Artifact* artifact_;
};
Artifact* Determinism::artifact_ = nullptr;

TEST_F(Determinism, RunToRun) {
  ExpectIdentical(Run({kPrompt}, 0, 0), Run({kPrompt}, 0, 0), "second run");
}

TEST_F(Determinism, Batch1VsBatch8AtEveryPosition) {
  const RowResult solo = Run({kPrompt}, 0, 0);
  CoPromptSpec spec;
  spec.seed = 99;
  spec.count = 7;
  spec.min_len = 3;
  spec.max_len = 40;
  const auto co = MakeCoPrompts(spec, 1024);
  for (int64_t pos : {0, 3, 7}) {
    const auto rows = ComposeBatch(kPrompt, co, pos);
    ExpectIdentical(solo, Run(rows, static_cast<size_t>(pos), 0),
                    "batch 8, our row at " + std::to_string(pos));
  }
}

TEST_F(Determinism, CoPromptsThemselvesMatchTheirSoloRuns) {
  CoPromptSpec spec;
  spec.seed = 5;
  spec.count = 3;
  const auto co = MakeCoPrompts(spec, 1024);
  const auto rows = ComposeBatch(kPrompt, co, 1);
  for (size_t r = 0; r < rows.size(); ++r) {
    ExpectIdentical(Run({rows[r]}, 0, 0), Run(rows, r, 0), "row " + std::to_string(r));
  }
}

TEST_F(Determinism, PrefillAllVsSplitVsTokenByToken) {
  const RowResult all = Run({kPrompt}, 0, 0);
  for (int64_t split : {1, 4, 10, 18}) {
    ExpectIdentical(all, Run({kPrompt}, 0, split), "split " + std::to_string(split));
  }
}

TEST_F(Determinism, SplitInsideABatch) {
  CoPromptSpec spec;
  spec.seed = 7;
  spec.count = 7;
  const auto rows = ComposeBatch(kPrompt, MakeCoPrompts(spec, 1024), 2);
  ExpectIdentical(Run({kPrompt}, 0, 0), Run(rows, 2, 5), "batch 8 with split 5");
}

TEST_F(Determinism, EveryBackendAndThreadCount) {
  const RowResult ref = Run({kPrompt}, 0, 0);
  for (const std::string& name : AvailableBackends()) {
    for (int threads : {1, 2, 3, 4}) {
      ExpectIdentical(ref, Run({kPrompt}, 0, 0, name, threads),
                      name + " with " + std::to_string(threads) + " threads");
    }
  }
}

}  // namespace
}  // namespace dv
