// IntPerplexity and FloatPerplexity against a recomputation that shares none of their code: the
// model fed one token at a time (decode steps), the log-probability of each window's scored
// targets summed in long double with its own log-sum-exp, on DetLLM's p-small artifact and
// checkpoint. The int engine's perplexity does not depend on the chunking (exact logits).
#include <gtest/gtest.h>

#include <cmath>

#include "checkpoint/hf_checkpoint.h"
#include "engine/artifact.h"
#include "engine/backends/backend_registry.h"
#include "fidelity/teacher_forced.h"
#include "prepare/calibration_set.h"
#include "tests/prepare/prepare_test_support.h"

namespace dv {
namespace {

std::vector<int32_t> HeldOut(int64_t vocab) {
  const auto set = LoadCalibrationIds(test::PSmallDir() + "/heldout_ids.json", 0, 0, vocab);
  std::vector<int32_t> ids;
  for (const auto& s : set.sequences) ids.insert(ids.end(), s.begin(), s.end());
  return ids;  // 512 tokens
}

// -log p(target) from real logits, in long double.
long double Nll(const std::vector<long double>& logits, int32_t target) {
  long double m = logits[0];
  for (long double v : logits) m = std::max(m, v);
  long double sum = 0;
  for (long double v : logits) sum += std::exp(v - m);
  return -(logits[static_cast<size_t>(target)] - m - std::log(sum));
}

// Windows written out again: [b, b + ctx) every stride, whole windows only; targets scored once.
template <typename StepLogits>
long double NllByDecodeSteps(const std::vector<int32_t>& ids, int64_t ctx, int64_t stride,
                             int64_t* scored, const StepLogits& step_logits) {
  long double nll = 0;
  int64_t done_until = 0;
  *scored = 0;
  for (int64_t b = 0; b + ctx <= static_cast<int64_t>(ids.size()); b += stride) {
    const std::vector<int32_t> w(ids.begin() + b, ids.begin() + b + ctx);
    const std::vector<std::vector<long double>> logits = step_logits(w);  // [ctx][V]
    for (int64_t target = std::max<int64_t>(b + 1, done_until + 1); target < b + ctx; ++target) {
      nll += Nll(logits[static_cast<size_t>(target - b - 1)], ids[static_cast<size_t>(target)]);
      ++*scored;
    }
    done_until = b + ctx - 1;
  }
  return nll;
}

TEST(Perplexity, IntMatchesTokenByTokenRecomputation) {
  const auto artifact = Artifact::Load(test::PSmallDir() + "/detllm_artifact");
  const ModelWeights& w = artifact->weights();
  const auto backend = MakeBackend("reference");
  IntQwen3 model(w, *backend);
  const std::vector<int32_t> ids = HeldOut(w.config.vocab);
  const int64_t V = w.config.vocab;
  for (const auto& [ctx, stride] : std::vector<std::pair<int64_t, int64_t>>{{64, 64}, {48, 20}}) {
    int64_t scored = 0;
    const long double want = NllByDecodeSteps(ids, ctx, stride, &scored, [&](const auto& win) {
      KvCache cache(w.config, ctx, model.backend());
      std::vector<std::vector<long double>> out;
      std::vector<int32_t> logits(static_cast<size_t>(V));
      for (int32_t id : win) {
        int64_t m = 0, k = 0;
        ForwardRow row{&cache, &id, 1, logits.data(), nullptr, &m, &k};
        model.Forward({&row, 1});
        std::vector<long double> real(static_cast<size_t>(V));
        for (int64_t v = 0; v < V; ++v) {
          real[static_cast<size_t>(v)] =
              std::ldexp(static_cast<long double>(logits[static_cast<size_t>(v)]) *
                             static_cast<long double>(w.head_m[static_cast<size_t>(v)] * m),
                         static_cast<int>(-(k + w.head_k)));
        }
        out.push_back(std::move(real));
      }
      return out;
    });
    const PerplexitySummary got = IntPerplexity(model, ids, ctx, stride);
    EXPECT_EQ(got.scored, scored) << ctx << "/" << stride;
    EXPECT_NEAR(static_cast<double>(got.nll_sum), static_cast<double>(want),
                1e-9 * static_cast<double>(want))
        << ctx << "/" << stride;
    // Chunking the windows changes nothing: the int logits are exact.
    const PerplexitySummary chunked = IntPerplexity(model, ids, ctx, stride, nullptr, 7);
    EXPECT_EQ(chunked.nll_sum, got.nll_sum);
  }
}

TEST(Perplexity, FloatMatchesTokenByTokenRecomputation) {
  const auto ckpt = OpenHfCheckpoint(test::PSmallDir() + "/hf");
  FloatQwen3 model(*ckpt, {});
  const std::vector<int32_t> ids = HeldOut(ckpt->config().vocab);
  const int64_t V = ckpt->config().vocab, ctx = 64;
  int64_t scored = 0;
  const long double want = NllByDecodeSteps(ids, ctx, ctx, &scored, [&](const auto& win) {
    FloatKvCache cache(ckpt->config(), ctx);
    std::vector<std::vector<long double>> out;
    std::vector<float> logits(static_cast<size_t>(V));
    for (int32_t id : win) {
      FloatForwardRow row{&cache, &id, 1, logits.data(), nullptr};
      model.Forward({&row, 1});
      out.emplace_back(logits.begin(), logits.end());
    }
    return out;
  });
  const PerplexitySummary got = FloatPerplexity(model, ids, ctx, ctx);
  EXPECT_EQ(got.scored, 8 * 63);
  EXPECT_EQ(got.scored, scored);
  // fp32 prefill against fp32 decode steps: the logits differ in their last bits only.
  EXPECT_NEAR(got.nll_sum, static_cast<double>(want), 1e-5 * static_cast<double>(want));
}

}  // namespace
}  // namespace dv
