// The float engine's GEMMs on cuBLAS (float_engine/cuda_fp16_linear.h), label cuda. Without a
// device: one-line refusal. With one: fp16 teacher-forced logits against the independent float64
// forward of tests/data/float within the fp16 bound the host fp16 path meets, and the same
// greedy tokens as the host where the reference's margin is clear of it. Device tests skip
// visibly (reported as skipped) where there is no GPU.
#include <gtest/gtest.h>

#include "checkpoint/half_float.h"
#include "checkpoint/hf_synth.h"
#include "cuda_device/cuda_device.h"
#include "float_engine/cuda_fp16_linear.h"
#include "float_engine/float_model.h"
#include "tests/float_engine/float_reference.h"

namespace dv {
namespace {

bool HaveDevice() { return CudaDeviceCount() > 0; }

TEST(CudaFp16Host, NoDeviceIsOneLineError) {
  if (HaveDevice()) GTEST_SKIP() << "a CUDA device is present: nothing to refuse";
  try {
    MakeCudaFp16Linear();
    FAIL() << "no error";
  } catch (const FloatEngineError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(what.rfind("float engine on cuda: no CUDA device here (cudaGetDeviceCount: ", 0), 0u)
        << what;
  }
}

class CudaFp16Device : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!HaveDevice()) {
      std::string why;
      CudaDeviceCount(&why);
      GTEST_SKIP() << "no CUDA device (" << why << ")";
    }
    ref_ = test::LoadFloatReference(GetParam());
    if (ref_.format != "hf") GTEST_SKIP() << "the GGUF reference runs on the host only";
    ckpt_ = OpenHfSynthetic(ref_.preset, ref_.seed);
    ASSERT_EQ(ckpt_->ContentSha256(), ref_.model_sha256);
  }
  test::FloatReference ref_;
  std::unique_ptr<FloatCheckpoint> ckpt_;
};

TEST_P(CudaFp16Device, TeacherForcedWithinTheFp16Bound) {
  auto linear = MakeCudaFp16Linear();
  EXPECT_NE(linear->Description().find("cublasGemmEx"), std::string::npos);
  FloatQwen3 model(*ckpt_, {FloatDType::kFp16, 0, linear});
  const std::vector<int32_t> seq = ref_.Sequence();
  FloatKvCache cache(model.config(), ref_.positions);
  std::vector<float> logits(static_cast<size_t>(ref_.positions * ref_.vocab));
  FloatForwardRow row{&cache, seq.data(), ref_.positions, nullptr, logits.data()};
  model.Forward({&row, 1});
  for (int64_t p = 0; p < ref_.positions; ++p) {
    const float* l = logits.data() + p * ref_.vocab;
    test::ExpectPositionMatches(ref_, p, l, test::kFp16RelTol, "fp16 on cuda");
    for (int64_t i = 0; i < ref_.vocab; ++i) ASSERT_EQ(RoundToF16(l[i]), l[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Synthetic, CudaFp16Device,
                         ::testing::Values("qwen3-tiny", "qwen3-tiny-hd128"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace dv
