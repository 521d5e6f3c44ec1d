// The float engine against the float64 forward of the qwen3-0.6b synthetic checkpoint (Qwen3-
// 0.6B's shapes; tests/data/float/qwen3-0.6b.json holds a sample of each position's float64
// logits: its top 32 and 96 fixed ids). Label slow: the 1.5 GB checkpoint is synthesized into
// the cache once (~15 s) and widened to 2.4 GB of fp32 weights.
#include <gtest/gtest.h>

#include "checkpoint/hf_synth.h"
#include "float_engine/float_model.h"
#include "tests/float_engine/float_reference.h"

namespace dv {
namespace {

TEST(FloatReferenceSlow, Qwen06bFp32AndBf16) {
  const test::FloatReference ref = test::LoadFloatReference("qwen3-0.6b");
  const auto ckpt = OpenHfSynthetic(ref.preset, ref.seed);
  ASSERT_EQ(ckpt->ContentSha256(), ref.model_sha256);
  const std::vector<int32_t> seq = ref.Sequence();
  for (FloatDType dtype : {FloatDType::kFp32, FloatDType::kBf16}) {
    FloatQwen3 model(*ckpt, {dtype, 0, nullptr});
    FloatKvCache cache(model.config(), ref.positions);
    std::vector<float> logits(static_cast<size_t>(ref.positions * ref.vocab));
    FloatForwardRow row{&cache, seq.data(), ref.positions, nullptr, logits.data()};
    model.Forward({&row, 1});
    const double tol = dtype == FloatDType::kFp32 ? test::kFp32RelTol : test::kBf16RelTol;
    for (int64_t p = 0; p < ref.positions; ++p) {
      test::ExpectPositionMatches(ref, p, logits.data() + p * ref.vocab, tol,
                                  FloatDTypeName(dtype));
    }
  }
}

}  // namespace
}  // namespace dv
