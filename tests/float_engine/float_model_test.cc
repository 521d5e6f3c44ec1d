// The float engine's contracts other than accuracy (float_reference_test.cc has that): greedy
// pick rule, input checks, rows independent of their batch within the fp32 tolerance, what
// weights it holds, and Llama-style configs (no QK-Norm, biases) running.
#include <gtest/gtest.h>

#include <cmath>

#include "checkpoint/half_float.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_synth.h"
#include "engine/co_prompts.h"
#include "float_engine/blas.h"
#include "float_engine/float_generate.h"
#include "float_engine/float_linear.h"
#include "tests/checkpoint/hf_test_folders.h"
#include "tests/float_engine/float_reference.h"

namespace dv {
namespace {

class FloatModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ckpt_ = OpenHfSynthetic("qwen3-tiny", 0).release(); }
  static void TearDownTestSuite() {
    delete ckpt_;
    ckpt_ = nullptr;
  }
  static FloatCheckpoint* ckpt_;
};
FloatCheckpoint* FloatModelTest::ckpt_ = nullptr;

TEST(FloatDType, Names) {
  EXPECT_EQ(ParseFloatDType("fp32"), FloatDType::kFp32);
  EXPECT_EQ(ParseFloatDType("bf16"), FloatDType::kBf16);
  EXPECT_STREQ(FloatDTypeName(FloatDType::kBf16), "bf16");
  EXPECT_EQ(ParseFloatDType("bf16"), ParseKind<FloatDType>("bf16")) << "one spelling (run_kinds.h)";
  EXPECT_EQ(ParseFloatDType("fp16"), FloatDType::kFp16);
  EXPECT_STREQ(FloatDTypeName(FloatDType::kFp16), "fp16");
  EXPECT_THROW(ParseFloatDType("fp8"), FloatEngineError) << "a dtype the engine does not run";
  EXPECT_THROW(ParseFloatDType("float32"), FloatEngineError);
}

TEST_F(FloatModelTest, GreedyPickLowestIdOnTiesNanAsTorch) {
  FloatQwen3 model(*ckpt_, {});
  std::vector<float> v(1024, -1.0f);
  v[7] = 3.0f;
  v[900] = 3.0f;
  EXPECT_EQ(model.GreedyPick(v.data()), 7);
  v[500] = NAN;
  EXPECT_EQ(model.GreedyPick(v.data()), 500) << "torch.argmax treats NaN as the largest";
  std::fill(v.begin(), v.end(), -INFINITY);
  EXPECT_EQ(model.GreedyPick(v.data()), 0);
}

// Input a user can give is refused by generation as an expected failure (GenerationError, exit
// 2), as the integer engine's GenerateGreedy refuses it.
TEST_F(FloatModelTest, GenerationRefusesBadInput) {
  FloatQwen3 model(*ckpt_, {});
  GenerationOptions go;
  go.max_new = 2048;
  EXPECT_THROW(GenerateGreedyFloat(model, {{1, 2}}, go), GenerationError) << "max_pos";
  go.max_new = 0;
  EXPECT_THROW(GenerateGreedyFloat(model, {{1, 2}}, go), GenerationError);
  go.max_new = 1;
  EXPECT_THROW(GenerateGreedyFloat(model, {{}}, go), GenerationError);
  EXPECT_THROW(GenerateGreedyFloat(model, {{1, 1024}}, go), GenerationError) << "vocabulary 1024";
  EXPECT_THROW(GenerateGreedyFloat(model, {{-1}}, go), GenerationError);
}

// Forward's preconditions are invariants (DV_CHECK), as IntQwen3::Forward's: a call that breaks
// them is a bug of its caller and aborts with the values.
using FloatModelDeathTest = FloatModelTest;
TEST_F(FloatModelDeathTest, ForwardPreconditionsAreInvariants) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // OpenBLAS runs threads
  FloatQwen3 model(*ckpt_, {});
  FloatKvCache cache(model.config(), 4);
  std::vector<float> logits(1024);
  const std::vector<int32_t> bad = {1, 1024};
  FloatForwardRow row{&cache, bad.data(), 2, logits.data(), nullptr};
  EXPECT_DEATH(model.Forward({&row, 1}), "check failed: .*token id 1024, vocabulary 1024");
  const std::vector<int32_t> five = {1, 2, 3, 4, 5};
  row = {&cache, five.data(), 5, logits.data(), nullptr};
  EXPECT_DEATH(model.Forward({&row, 1}), "check failed: .*KV cache capacity 4 exceeded");
}

// A row's logits do not depend on its batch beyond float rounding (the engine never mixes rows;
// only the GEMM shapes change). Bits may differ: that is what the demo's float rows measure.
TEST_F(FloatModelTest, RowsIndependentOfTheirBatchWithinTolerance) {
  FloatQwen3 model(*ckpt_, {});
  const std::vector<int32_t> prompt = {5, 17, 300, 41, 9, 77};
  GenerationOptions go;
  go.max_new = 8;
  std::vector<std::vector<float>> alone, batched;
  GenerateGreedyFloat(model, {prompt}, go, nullptr, [&](size_t, int64_t, std::span<const float> l) {
    alone.emplace_back(l.begin(), l.end());
  });
  CoPromptSpec spec;
  spec.count = 7;
  spec.max_id = 1023;
  go.split = 2;
  GenerateGreedyFloat(model, ComposeBatch(prompt, MakeCoPrompts(spec, 1024), 4), go, nullptr,
                      [&](size_t r, int64_t, std::span<const float> l) {
                        if (r == 4) batched.emplace_back(l.begin(), l.end());
                      });
  ASSERT_EQ(alone.size(), 8u);
  ASSERT_EQ(batched.size(), 8u);
  for (size_t s = 0; s < alone.size(); ++s) {
    double norm = 0, err = 0;
    for (size_t i = 0; i < alone[s].size(); ++i) {
      norm = std::max(norm, std::abs(static_cast<double>(alone[s][i])));
      err = std::max(err, std::abs(static_cast<double>(alone[s][i]) - batched[s][i]));
    }
    EXPECT_LE(err, test::kFp32RelTol * norm) << "step " << s;
  }
}

// Token by token with prompts of one length every call has the same 6 rows of one token: the
// small-batch GEMM and the pooled decode attention, both documented to give the same bits at any
// thread count. (A call of 1 row goes to OpenBLAS's sgemv, whose bits may depend on its threads.)
TEST_F(FloatModelTest, BatchedDecodeSameBitsAtAnyThreadCount) {
  if (SmallGemmIsaForThisMachine() == SmallGemmIsa::kNone) {
    GTEST_SKIP() << "no small-batch GEMM kernel on this CPU: its calls go to OpenBLAS's sgemm";
  }
  CoPromptSpec spec;
  spec.count = 5;
  spec.min_len = spec.max_len = 4;
  spec.max_id = 1023;
  const auto rows = ComposeBatch({5, 17, 300, 41}, MakeCoPrompts(spec, 1024), 2);
  GenerationOptions go;
  go.max_new = 6;
  go.split = 1;
  std::vector<std::vector<float>> first;
  for (int threads : {1, 2, 3}) {
    FloatQwen3 model(*ckpt_, {FloatDType::kFp32, threads, nullptr});
    std::vector<std::vector<float>> logits;
    GenerateGreedyFloat(model, rows, go, nullptr, [&](size_t, int64_t, std::span<const float> l) {
      logits.emplace_back(l.begin(), l.end());
    });
    ASSERT_EQ(logits.size(), rows.size() * 6);
    if (threads == 1) {
      first = logits;
    } else {
      EXPECT_EQ(logits, first) << threads << " threads";
    }
  }
}

TEST_F(FloatModelTest, AllLogitsAndLastLogitsAgree) {
  FloatQwen3 model(*ckpt_, {});
  const std::vector<int32_t> ids = {3, 1, 4, 1, 5};
  FloatKvCache cache(model.config(), 5);
  std::vector<float> all(5 * 1024), last(1024);
  FloatForwardRow row{&cache, ids.data(), 5, last.data(), all.data()};
  model.Forward({&row, 1});
  for (size_t i = 0; i < 1024; ++i) {
    EXPECT_NEAR(last[i], all[4 * 1024 + i], 1e-5 * std::abs(last[i]) + 1e-6) << i;
  }
}

TEST_F(FloatModelTest, HoldsEveryWeightOnceInFp32) {
  FloatQwen3 model(*ckpt_, {FloatDType::kFp32, 0, nullptr});
  const FloatModelConfig& c = model.config();
  const int64_t per_layer = c.hidden * (c.q_dim() + 2 * c.kv_dim()) + c.q_dim() * c.hidden +
                            3 * c.hidden * c.intermediate + 2 * c.hidden + 2 * c.head_dim;
  const int64_t floats = c.n_layers * per_layer + c.hidden + c.vocab * c.hidden;
  // Allocations are 4 KiB-aligned slices of one arena.
  EXPECT_GE(model.weight_bytes(), 4 * floats);
  EXPECT_LE(model.weight_bytes(), 4 * floats + (c.n_layers * 10 + 2) * 4096);
}

// bf16 mode keeps the linear weights as bfloat16 (2 bytes a value) where the small-batch kernel
// runs, the norms in fp32; without the kernel (DETVERIFY_FLOAT_SMALL_GEMM=off) every weight is
// held as its fp32 value, and the logits are close either way (only sums' orders differ).
TEST_F(FloatModelTest, Bf16HoldsTheLinearWeightsIn16Bits) {
  if (SmallGemmIsaForThisMachine() == SmallGemmIsa::kNone) {
    GTEST_SKIP() << "no small-batch GEMM on this CPU: bf16 weights are held as fp32 here";
  }
  const FloatModelConfig& c = ckpt_->config();
  const int64_t matrices = c.n_layers * (c.hidden * (c.q_dim() + 2 * c.kv_dim()) +
                                         c.q_dim() * c.hidden + 3 * c.hidden * c.intermediate) +
                           c.vocab * c.hidden;
  const int64_t vectors = c.n_layers * (2 * c.hidden + 2 * c.head_dim) + c.hidden;
  const int64_t slack = (c.n_layers * 10 + 2) * 4096;
  // Every path of the bf16 GEMMs: 70 tokens of prefill (sgemm on widened blocks of 256 weight
  // rows: 3 for gate/up, 4 for the LM head), a chunk of 20 (the kernel, 16 + 4 rows), one token.
  std::vector<int32_t> ids(91);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919 + 13) % 1000);
  auto logits = [&](FloatQwen3& model) {
    const auto vocab = static_cast<size_t>(c.vocab);
    FloatKvCache cache(model.config(), static_cast<int64_t>(ids.size()));
    std::vector<float> all(ids.size() * vocab);
    int64_t at = 0;
    for (int64_t chunk : {70, 20, 1}) {
      FloatForwardRow row{&cache, ids.data() + at, chunk, nullptr,
                          all.data() + static_cast<size_t>(at) * vocab};
      model.Forward({&row, 1});
      at += chunk;
    }
    return all;
  };
  FloatQwen3 bf16(*ckpt_, {FloatDType::kBf16, 2, nullptr});
  EXPECT_GE(bf16.weight_bytes(), 2 * matrices + 4 * vectors);
  EXPECT_LE(bf16.weight_bytes(), 2 * matrices + 4 * vectors + slack);
  const std::vector<float> packed = logits(bf16);
  setenv("DETVERIFY_FLOAT_SMALL_GEMM", "off", 1);
  FloatQwen3 wide(*ckpt_, {FloatDType::kBf16, 2, nullptr});
  unsetenv("DETVERIFY_FLOAT_SMALL_GEMM");
  EXPECT_GE(wide.weight_bytes(), 4 * (matrices + vectors));
  const std::vector<float> reference = logits(wide);
  ASSERT_EQ(packed.size(), reference.size());
  float max_abs = 0, max_diff = 0;
  for (size_t i = 0; i < packed.size(); ++i) {
    EXPECT_EQ(RoundToBf16(packed[i]), packed[i]) << "logits are bf16 values";
    max_abs = std::max(max_abs, std::abs(reference[i]));
    max_diff = std::max(max_diff, std::abs(packed[i] - reference[i]));
  }
  EXPECT_LE(max_diff, test::kBf16RelTol * max_abs);
}

// The seam the fp16-cuda rows use (float_engine/float_linear.h), with a host stand-in that
// computes each GEMM in double: every projection and the LM head go through it, each weight is
// handed over once at load, in reading order, and the logits are the host GEMMs' up to fp16.
class DoubleLinear final : public FloatLinearBackend {
 public:
  void AddWeight(const float* w, int64_t n, int64_t k) override { shapes.push_back({w, n, k}); }
  void Linear(const float* x, int64_t ldx, int64_t m, int64_t k, const float* w, int64_t n,
              float* y, int64_t ldy) override {
    bool known = false;
    for (const Shape& s : shapes) known = known || (s.w == w && s.n == n && s.k == k);
    ASSERT_TRUE(known) << "a GEMM on a weight the engine did not hand over";
    ++calls;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double sum = 0.0;
        for (int64_t i = 0; i < k; ++i) sum += double{x[r * ldx + i]} * double{w[c * k + i]};
        y[r * ldy + c] = static_cast<float>(sum);
      }
    }
  }
  std::string Description() const override { return "double on the host"; }
  std::vector<std::pair<std::string, std::string>> DeviceFacts() const override { return {}; }

  struct Shape {
    const float* w;
    int64_t n, k;
  };
  std::vector<Shape> shapes;
  int64_t calls = 0;
};

TEST_F(FloatModelTest, LinearBackendRunsEveryProjection) {
  auto linear = std::make_shared<DoubleLinear>();
  FloatQwen3 seam(*ckpt_, {FloatDType::kFp16, 1, linear});
  const FloatModelConfig& c = seam.config();
  ASSERT_EQ(static_cast<int64_t>(linear->shapes.size()), 4 * c.n_layers + 1);
  EXPECT_EQ(linear->shapes[0].n, c.q_dim() + 2 * c.kv_dim());
  EXPECT_EQ(linear->shapes[3].k, c.intermediate);
  EXPECT_EQ(linear->shapes.back().n, c.vocab);
  FloatQwen3 host(*ckpt_, {FloatDType::kFp16, 1, nullptr});
  const std::vector<int32_t> ids = {3, 1, 4, 1, 5, 9};
  std::vector<float> a(6 * 1024), b(6 * 1024);
  FloatKvCache ca(c, 6), cb(c, 6);
  FloatForwardRow ra{&ca, ids.data(), 6, nullptr, a.data()};
  FloatForwardRow rb{&cb, ids.data(), 6, nullptr, b.data()};
  seam.Forward({&ra, 1});
  host.Forward({&rb, 1});
  EXPECT_EQ(linear->calls, 4 * c.n_layers + 1) << "one call per projection and the head";
  double worst = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(RoundToF16(a[i]), a[i]) << "the engine rounds what the backend returns";
    worst = std::max(worst, std::abs(double{a[i]} - double{b[i]}));
    norm = std::max(norm, std::abs(double{b[i]}));
  }
  EXPECT_LE(worst, test::kFp16RelTol * norm) << "the same forward up to the GEMMs' order";
  EXPECT_GT(worst, 0.0) << "the stand-in's GEMM really ran (double sums round differently)";
}

// Llama-style: no QK-Norm, attention and MLP biases; each bias moves the logits.
TEST(FloatModelLlama, NoQkNormWithBiasesRuns) {
  test::FolderSpec spec;
  spec.config.family = ModelFamily::kLlama;
  spec.config.qk_norm = false;
  spec.config.attention_bias = true;
  spec.config.mlp_bias = true;
  const auto tensors = test::SpecTensors(spec);
  test_files::ScratchDir d("llama");
  std::filesystem::create_directories(d.File("m"));
  WriteSafetensors(d.File("m/model.safetensors"), tensors);
  FloatModelConfig qwen_form = spec.config;
  qwen_form.family = ModelFamily::kQwen3;
  auto cfg = nlohmann::json::parse(Qwen3ConfigJson(qwen_form));
  cfg["model_type"] = "llama";
  cfg["architectures"] = {"LlamaForCausalLM"};
  cfg["mlp_bias"] = true;
  test_files::WriteFile(d.File("m/config.json"), cfg.dump());
  const auto ckpt = OpenHfCheckpoint(d.File("m"));
  EXPECT_FALSE(ckpt->weights().layers[0].q_norm.has_value());
  ASSERT_TRUE(ckpt->weights().layers[0].down_bias.has_value());
  FloatQwen3 model(*ckpt, {});
  GenerationOptions go;
  go.max_new = 3;
  const auto res = GenerateGreedyFloat(model, {{1, 2, 3}}, go);
  EXPECT_EQ(res[0].tokens.size(), 3u);
  EXPECT_EQ(res[0].logits_chain.size(), 3u);
}

}  // namespace
}  // namespace dv
