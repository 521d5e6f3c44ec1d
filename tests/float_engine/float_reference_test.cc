// The float engine against an independent float64 forward of the same checkpoints
// (tests/data/float, made by scripts/float_engine/make_float_reference.py with numpy): every
// position's logits within the stated relative tolerance and the same argmax wherever the
// reference's top-2 margin exceeds it, on qwen3-tiny (GQA 4/2, head_dim 32),
// qwen3-tiny-hd128 (GQA 4/2, head_dim 128) and llama-tiny-gguf (the Llama GGUF `synth --format
// gguf` writes, read through gguf::OpenGgufCheckpoint; the reference read it with gguf-py and
// transformers' GGUF loader), in fp32, bf16 and fp16, whole prefill, token-by-token
// decode, split prefill inside a batch with random co-prompts, at 1 and 2 BLAS threads. Also
// DetLLM's own float64 top-1 on its p-small checkpoint (shared/detllm/prepare).
#include <gtest/gtest.h>

#include <bit>

#include "checkpoint/half_float.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_synth.h"
#include "engine/artifact.h"
#include "engine/co_prompts.h"
#include "float_engine/blas.h"
#include "float_engine/float_generate.h"
#include "gguf/gguf_checkpoint.h"
#include "gguf/gguf_synth.h"
#include "tests/float_engine/float_reference.h"

namespace dv {
namespace {

using test::FloatReference;

class FloatReferenceTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ref_ = test::LoadFloatReference(GetParam());
    if (ref_.format == "gguf") {
      const std::string path = scratch_.File(ref_.preset + ".gguf");
      gguf::WriteSynthGguf(gguf::FindGgufSynthPreset(ref_.preset), ref_.seed, path);
      ckpt_ = gguf::OpenGgufCheckpoint(path);
    } else {
      ckpt_ = OpenHfSynthetic(ref_.preset, ref_.seed);
    }
    ASSERT_EQ(ckpt_->ContentSha256(), ref_.model_sha256) << "not the checkpoint of the reference";
  }

  // Teacher-forced logits of the whole sequence in one forward call.
  std::vector<float> TeacherForced(FloatQwen3& model) {
    const std::vector<int32_t> seq = ref_.Sequence();
    FloatKvCache cache(model.config(), ref_.positions);
    std::vector<float> logits(static_cast<size_t>(ref_.positions * ref_.vocab));
    FloatForwardRow row{&cache, seq.data(), ref_.positions, nullptr, logits.data()};
    model.Forward({&row, 1});
    return logits;
  }

  void ExpectReducedPrecision(FloatDType dtype, double tol, float (*round)(float),
                              const std::string& what) {
    FloatQwen3 model(*ckpt_, {dtype, 0, nullptr});
    const std::vector<float> logits = TeacherForced(model);
    for (int64_t p = 0; p < ref_.positions; ++p) {
      const float* l = logits.data() + p * ref_.vocab;
      test::ExpectPositionMatches(ref_, p, l, tol, what + " prefill");
      for (int64_t i = 0; i < ref_.vocab; ++i) {
        ASSERT_EQ(round(l[i]), l[i]) << what << " logits are " << what << " values";
      }
    }
  }

  // Our prompt as row `position` of a batch of 4, the others random co-prompts.
  std::vector<std::vector<int32_t>> BatchWithCoPrompts(int64_t position) const {
    CoPromptSpec spec;
    spec.count = 3;
    spec.max_id = ref_.vocab - 1;
    return ComposeBatch(ref_.prompt, MakeCoPrompts(spec, ref_.vocab), position);
  }
  // As many new tokens as the reference continues with, after a split prefill of 3 tokens.
  GenerationOptions SplitGeneration() const {
    GenerationOptions go;
    go.max_new = static_cast<int64_t>(ref_.continuation.size());
    go.split = 3;
    return go;
  }

  test_files::ScratchDir scratch_{"float-reference"};
  FloatReference ref_;
  std::unique_ptr<FloatCheckpoint> ckpt_;
};

TEST_P(FloatReferenceTest, Fp32TeacherForcedAtOneAndTwoThreads) {
  for (int threads : {1, 2}) {
    FloatQwen3 model(*ckpt_, {FloatDType::kFp32, threads, nullptr});
    EXPECT_EQ(BlasThreads(), threads);
    const std::vector<float> logits = TeacherForced(model);
    for (int64_t p = 0; p < ref_.positions; ++p) {
      test::ExpectPositionMatches(ref_, p, logits.data() + p * ref_.vocab, test::kFp32RelTol,
                                  "fp32 prefill, " + std::to_string(threads) + " threads");
    }
  }
}

TEST_P(FloatReferenceTest, Fp32DecodeTokenByToken) {
  FloatQwen3 model(*ckpt_, {FloatDType::kFp32, 0, nullptr});
  const std::vector<int32_t> seq = ref_.Sequence();
  const auto n_prompt = static_cast<int64_t>(ref_.prompt.size());
  FloatKvCache cache(model.config(), ref_.positions);
  std::vector<float> logits(static_cast<size_t>(ref_.vocab));
  FloatForwardRow row{&cache, seq.data(), n_prompt, logits.data(), nullptr};
  model.Forward({&row, 1});
  test::ExpectPositionMatches(ref_, n_prompt - 1, logits.data(), test::kFp32RelTol, "decode");
  for (int64_t p = n_prompt; p < ref_.positions; ++p) {
    row = {&cache, seq.data() + p, 1, logits.data(), nullptr};
    model.Forward({&row, 1});
    test::ExpectPositionMatches(ref_, p, logits.data(), test::kFp32RelTol, "decode");
  }
  EXPECT_EQ(cache.length(), ref_.positions);
}

// Greedy generation as `generate` runs it: our prompt in a batch of 4 with random co-prompts,
// split prefill (3 tokens, then one by one). Every step's logits match the reference, so the
// greedy tokens are the float64 continuation wherever the margins allow no other choice.
TEST_P(FloatReferenceTest, Fp32GreedyInABatchWithSplitPrefill) {
  FloatQwen3 model(*ckpt_, {FloatDType::kFp32, 0, nullptr});
  const auto rows = BatchWithCoPrompts(2);
  const GenerationOptions go = SplitGeneration();
  const auto n_prompt = static_cast<int64_t>(ref_.prompt.size());
  int checked = 0;
  std::vector<float> step0;
  const auto results = GenerateGreedyFloat(
      model, rows, go, nullptr, [&](size_t r, int64_t step, std::span<const float> logits) {
        if (r != 2) return;
        test::ExpectPositionMatches(ref_, n_prompt - 1 + step, logits.data(), test::kFp32RelTol,
                                    "greedy step " + std::to_string(step));
        if (step == 0) step0.assign(logits.begin(), logits.end());
        ++checked;
      });
  EXPECT_EQ(checked, go.max_new);
  bool margins_decide = true;
  for (size_t s = 0; s < ref_.continuation.size() && margins_decide; ++s) {
    const size_t pos = static_cast<size_t>(n_prompt - 1) + s;
    margins_decide = ref_.margin[pos] > 2 * test::kFp32RelTol * ref_.norm_inf[pos];
    if (margins_decide) {
      EXPECT_EQ(results[2].tokens[s], ref_.continuation[s]) << "step " << s;
    }
  }
  // Step 0 of the logits chain: SHA-256(SHA-256("detllm-demo-v1") || the float32 logits as
  // little-endian bytes), assembled here byte by byte.
  const std::string seed_hex = Sha256Hex({reinterpret_cast<const uint8_t*>("detllm-demo-v1"), 14});
  std::vector<uint8_t> data;
  for (size_t i = 0; i < 64; i += 2) {
    data.push_back(static_cast<uint8_t>(std::stoi(seed_hex.substr(i, 2), nullptr, 16)));
  }
  for (float v : step0) {
    const auto bits = std::bit_cast<uint32_t>(v);
    for (int b = 0; b < 4; ++b) data.push_back(static_cast<uint8_t>(bits >> (8 * b)));
  }
  EXPECT_EQ(results[2].logits_chain[0], Sha256Hex(data));
}

// A reduced precision's teacher-forced logits: within its bound of float64, and every logit a
// value of that precision. fp16 is what the fp16-cuda rows compute (here with host GEMMs); with 3
// more mantissa bits than bf16 its error sits between fp32's and bf16's.

TEST_P(FloatReferenceTest, Bf16TeacherForced) {
  ExpectReducedPrecision(FloatDType::kBf16, test::kBf16RelTol, &RoundToBf16, "bf16");
}

// bf16 decode paths: one token a call (1 row) and a batch of 4 with split prefill (4 to 12 rows a
// call), the GEMMs the small-batch kernel's on bf16 weights where this CPU has it; every step's
// logits within bf16's bound of float64.
TEST_P(FloatReferenceTest, Bf16DecodeTokenByTokenAndInABatch) {
  FloatQwen3 model(*ckpt_, {FloatDType::kBf16, 0, nullptr});
  const std::vector<int32_t> seq = ref_.Sequence();
  const auto n_prompt = static_cast<int64_t>(ref_.prompt.size());
  FloatKvCache cache(model.config(), ref_.positions);
  std::vector<float> logits(static_cast<size_t>(ref_.vocab));
  for (int64_t p = 0; p < ref_.positions; ++p) {
    FloatForwardRow row{&cache, seq.data() + p, 1, logits.data(), nullptr};
    model.Forward({&row, 1});
    test::ExpectPositionMatches(ref_, p, logits.data(), test::kBf16RelTol, "bf16 token by token");
  }
  const auto rows = BatchWithCoPrompts(1);
  const GenerationOptions go = SplitGeneration();
  // The reference continues with float64's greedy tokens: steps are compared while the picks so
  // far are the reference's (step 0 always).
  int checked = 0;
  bool on_reference = true;
  GenerateGreedyFloat(
      model, rows, go, nullptr, [&](size_t r, int64_t step, std::span<const float> l) {
        if (r != 1 || !on_reference) return;
        test::ExpectPositionMatches(ref_, n_prompt - 1 + step, l.data(), test::kBf16RelTol,
                                    "bf16 batch step");
        ++checked;
        on_reference = model.GreedyPick(l.data()) == ref_.continuation[static_cast<size_t>(step)];
      });
  EXPECT_GE(checked, 1);
}

TEST_P(FloatReferenceTest, Fp16TeacherForced) {
  ExpectReducedPrecision(FloatDType::kFp16, test::kFp16RelTol, &RoundToF16, "fp16");
}

INSTANTIATE_TEST_SUITE_P(Synthetic, FloatReferenceTest,
                         ::testing::Values("qwen3-tiny", "qwen3-tiny-hd128", "llama-tiny-gguf"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// DetLLM's float64 forward of its p-small checkpoint (tied BF16 embeddings, no outliers):
// teacher-forced top-1 on its 8 x 64 held-out ids, which transformers' float32 matched at all
// 512 positions (fidelity.json). Skipped where shared/ is absent.
TEST(FloatEngineDetllm, PSmallTop1EqualsDetllmFloat64) {
  const char* shared = std::getenv("DETVERIFY_SHARED_DIR");
  const std::string dir = std::string(shared ? shared : "../shared") + "/detllm/prepare/p-small";
  if (!IsHfCheckpointDir(dir + "/hf")) GTEST_SKIP() << dir << " not present";
  const auto ckpt = OpenHfCheckpoint(dir + "/hf");
  const auto heldout = nlohmann::json::parse(test_files::ReadFile(dir + "/heldout_ids.json"));
  const auto fidelity = nlohmann::json::parse(test_files::ReadFile(dir + "/fidelity.json"));
  const auto& top1 = fidelity.at("float64_top1");
  FloatQwen3 model(*ckpt, {FloatDType::kFp32, 0, nullptr});
  const int64_t V = ckpt->config().vocab;
  int agree = 0, total = 0;
  for (size_t s = 0; s < heldout.at("ids").size(); ++s) {
    const auto ids = heldout.at("ids")[s].get<std::vector<int32_t>>();
    const auto n = static_cast<int64_t>(ids.size());
    FloatKvCache cache(ckpt->config(), n);
    std::vector<float> logits(static_cast<size_t>(n * V));
    FloatForwardRow row{&cache, ids.data(), n, nullptr, logits.data()};
    model.Forward({&row, 1});
    for (int64_t p = 0; p < n; ++p, ++total) {
      const int64_t want = top1[s][static_cast<size_t>(p)];
      if (test::Argmax(logits.data() + p * V, V) == want) {
        ++agree;
      } else if (total - agree <= 5) {
        ADD_FAILURE() << "sequence " << s << " position " << p << ": top-1 "
                      << test::Argmax(logits.data() + p * V, V) << ", DetLLM float64 " << want;
      }
    }
  }
  EXPECT_EQ(agree, total);
  EXPECT_EQ(total, 512);
}

}  // namespace
}  // namespace dv
