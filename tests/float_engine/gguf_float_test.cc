// The float engine on a GGUF model: SmolLM2-135M-Instruct's Q4_1 file (the installed real model)
// read through gguf::OpenGgufCheckpoint, against Hugging Face transformers loading the same file
// itself (tests/data/gguf/smollm2_float_reference.json,
// scripts/gguf/make_smollm2_float_reference.py: gguf-py's dequantizers, transformers' own q/k
// un-permutation and Llama forward, in float64). Skips, naming the path, when the model is not
// installed (scripts/install_deps.sh --with-models).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "float_engine/float_generate.h"
#include "float_engine/float_model.h"
#include "gguf/gguf_checkpoint.h"
#include "gguf/model_cache.h"
#include "tests/support/smollm2.h"

namespace dv {
namespace {

nlohmann::json Reference() {
  std::ifstream in(std::string(DV_GGUF_TEST_DATA_DIR) + "/smollm2_float_reference.json");
  return nlohmann::json::parse(in);
}

TEST(GgufFloatCheckpoint, SmolLM2ConfigAndIdentity) {
  DV_REQUIRE_SMOLLM2(path);
  const auto ckpt = gguf::OpenGgufCheckpoint(path);
  const FloatModelConfig& c = ckpt->config();
  // SmolLM2-135M's shape as transformers reads it from the same file (config.json of the Hub
  // repository: 30 layers, hidden 576, 9/3 heads of 64, intermediate 1536, vocab 49152, tied,
  // theta 1e5, eps 1e-5 stored as a float32).
  EXPECT_EQ(c.family, ModelFamily::kLlama);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.n_layers, 30);
  EXPECT_EQ(c.hidden, 576);
  EXPECT_EQ(c.n_q_heads, 9);
  EXPECT_EQ(c.n_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.intermediate, 1536);
  EXPECT_EQ(c.vocab, 49152);
  EXPECT_EQ(c.max_pos, 8192);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope_theta, 100000.0);
  EXPECT_EQ(c.rms_norm_eps, static_cast<double>(1e-5f));
  EXPECT_EQ(ckpt->ContentSha256(), std::string(gguf::kSmolLM2Sha256)) << "the file's SHA-256";
  EXPECT_EQ(ckpt->ContentSha256(), Reference()["gguf_sha256"].get<std::string>());
  EXPECT_EQ(ckpt->weights().lm_head.bytes.data(), ckpt->weights().embed.bytes.data())
      << "tied: the head is the embedding, not a copy";
}

// Teacher-forced fp32 logits against transformers' float64 forward of the same file. Bound: a
// correct fp32 forward differs from float64 by rounding only; transformers' own fp32 forward lies
// `transformers_fp32_max_abs_err` (7e-5) from it on these logits, so ours must be within 8 times
// that plus 1e-4 absolute (another summation order through OpenBLAS, never a wrong formula: a
// wrong RoPE pairing, epsilon or un-permutation moves logits by 0.1 or more). The greedy top-1
// must be float64's wherever float64's top-1/top-2 margin exceeds twice the bound.
TEST(GgufFloatEngine, SmolLM2MatchesTransformersFloat64) {
  DV_REQUIRE_SMOLLM2(path);
  const nlohmann::json ref = Reference();
  const auto ckpt = gguf::OpenGgufCheckpoint(path);
  FloatQwen3 model(*ckpt, {});
  const std::vector<int32_t> ids = ref["ids"].get<std::vector<int32_t>>();
  const auto n = static_cast<int64_t>(ids.size());
  const int64_t V = model.config().vocab;
  std::vector<float> logits(static_cast<size_t>(n * V));
  FloatKvCache cache(model.config(), n);
  FloatForwardRow row{&cache, ids.data(), n, nullptr, logits.data()};
  model.Forward({&row, 1});

  const double bound = 8 * ref["transformers_fp32_max_abs_err"].get<double>() + 1e-4;
  double worst = 0.0;
  int checked_top1 = 0;
  for (int64_t p = 0; p < n; ++p) {
    const nlohmann::json& pos = ref["positions"][static_cast<size_t>(p)];
    const float* l = logits.data() + p * V;
    const auto sample = pos["ids"].get<std::vector<int64_t>>();
    const auto expected = pos["logits"].get<std::vector<double>>();
    for (size_t i = 0; i < sample.size(); ++i) {
      const double d = std::abs(static_cast<double>(l[sample[i]]) - expected[i]);
      worst = std::max(worst, d);
      EXPECT_LE(d, bound) << "position " << p << ", id " << sample[i];
    }
    if (pos["margin"].get<double>() > 2 * bound) {
      EXPECT_EQ(model.GreedyPick(l), pos["top1"].get<int32_t>()) << "position " << p;
      ++checked_top1;
    }
  }
  std::printf("max |fp32 - transformers float64| %.3g (bound %.3g); top-1 checked at %d of %lld\n",
              worst, bound, checked_top1, static_cast<long long>(n));
  EXPECT_GE(checked_top1, n * 9 / 10);
}

// The greedy continuation transformers' float64 forward chose (the ids after the prompt) is the
// float engine's greedy output in fp32 too.
TEST(GgufFloatEngine, SmolLM2GreedyContinuationIsTransformers) {
  DV_REQUIRE_SMOLLM2(path);
  const nlohmann::json ref = Reference();
  const auto ckpt = gguf::OpenGgufCheckpoint(path);
  FloatQwen3 model(*ckpt, {});
  const auto ids = ref["ids"].get<std::vector<int32_t>>();
  const auto prompt_tokens = ref["prompt_tokens"].get<size_t>();
  const std::vector<int32_t> prompt(ids.begin(),
                                    ids.begin() + static_cast<ptrdiff_t>(prompt_tokens));
  GenerationOptions go;
  go.max_new = static_cast<int64_t>(ids.size() - prompt_tokens);
  const std::vector<RowResult> out = GenerateGreedyFloat(model, {prompt}, go);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tokens,
            std::vector<int32_t>(ids.begin() + static_cast<ptrdiff_t>(prompt_tokens), ids.end()));
}

TEST(GgufFloatCheckpoint, NotAGgufIsAOneLineError) {
  const std::string path = std::string(DV_GGUF_TEST_DATA_DIR) + "/expected.json";
  EXPECT_FALSE(gguf::IsGgufFile(path));
  try {
    gguf::OpenGgufCheckpoint(path);
    ADD_FAILURE() << "no error";
  } catch (const gguf::GgufError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find(path), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace dv
