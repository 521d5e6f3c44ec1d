// prepare against DetLLM's prepare.py on more checkpoints than its p-small fixture
// (tests/data/prepare, made by scripts/prepare/make_prepare_reference.py with DetLLM's own code):
//   qwen3-tiny-hd128-tied  GQA 4/2, head_dim 128, outlier channels; DetLLM's statistics give
//                          DetLLM's artifacts byte for byte (smoothing on and off), and our own
//                          calibration forward lands within the bounds of calib_forward_test.cc;
//   qwen3-0.6b-tied        (label slow) Qwen3-0.6B's shapes: our statistics through DetLLM's
//                          quantization gave DetLLM's artifact, which prepare must reproduce.
#include <gtest/gtest.h>

#include <cmath>

#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_synth.h"
#include "engine/artifact.h"
#include "prepare/calib_stats.h"
#include "prepare/prepare_artifact.h"
#include "tests/prepare/prepare_test_support.h"

namespace dv {
namespace {

constexpr double kMaxStatRelError = 1e-5;  // as calib_forward_test.cc (measured here: 4.7e-6)

std::string CaseDir(const std::string& name) { return test::PrepareDataDir() + "/prepare/" + name; }

// The synthetic preset, made tied (DetLLM's prepare asserts tied embeddings).
std::unique_ptr<FloatCheckpoint> TiedSynthetic(const test_files::ScratchDir& s,
                                               const std::string& preset,
                                               const nlohmann::json& expected) {
  WriteHfSynthCheckpoint(FindHfSynthPreset(preset), 0, s.File("untied"));
  if (expected.contains("untied_model_safetensors_sha256")) {
    EXPECT_EQ(Sha256FileHex(s.File("untied/model.safetensors")),
              expected["untied_model_safetensors_sha256"])
        << "the synthetic checkpoint changed: regenerate tests/data/prepare";
  }
  test::WriteTiedCopy(s.File("untied"), s.File("tied"));
  std::filesystem::remove_all(s.File("untied"));
  return OpenHfCheckpoint(s.File("tied"));
}

class Hd128Tied : public ::testing::Test {
 protected:
  void SetUp() override {
    expected_ = test::ReadJson(CaseDir("qwen3-tiny-hd128-tied") + "/expected.json");
    checkpoint_ = TiedSynthetic(scratch_, "qwen3-tiny-hd128", expected_);
  }
  std::string FromDetllmStats(bool smooth) {
    PrepareOptions o;
    o.out_dir = scratch_.File(smooth ? "from-stats" : "from-stats-nosmooth");
    o.stats = LoadCalibStats(CaseDir("qwen3-tiny-hd128-tied") + "/detllm_stats.safetensors",
                             checkpoint_->config());
    o.recipe.smooth_acts = o.recipe.smooth_o = smooth;
    o.recipe.calib_samples = 8;
    o.recipe.calib_len = 128;
    o.threads = 2;
    PrepareArtifact(*checkpoint_, o);
    return o.out_dir;
  }

  test_files::ScratchDir scratch_{"prepare-hd128"};
  nlohmann::json expected_;
  std::unique_ptr<FloatCheckpoint> checkpoint_;
};

TEST_F(Hd128Tied, DetllmsStatisticsGiveDetllmsArtifactsByteForByte) {
  for (const bool smooth : {true, false}) {
    const nlohmann::json& want = expected_[smooth ? "smoothing" : "nosmooth"];
    const std::string got = FromDetllmStats(smooth);
    EXPECT_EQ(Sha256FileHex(got + "/model.safetensors"), want["model_safetensors_sha256"])
        << (smooth ? "smoothing" : "nosmooth") << ", tensors that differ:"
        << test::Join(test::TensorShaDifferences(got, want["tensor_sha256"]));
    std::vector<std::string> config;
    test::DiffJson("", test::ReadJson(got + "/config.json"), want["config"], config);
    EXPECT_TRUE(config.empty()) << test::Join(config);
  }
}

TEST_F(Hd128Tied, OwnCalibrationWithinTheBoundsOfDetllms) {
  PrepareOptions o;
  o.out_dir = scratch_.File("own");
  o.calibration = LoadCalibrationIds(CaseDir("qwen3-tiny-hd128-tied") + "/calib_ids.json", 0, 0,
                                     checkpoint_->config().vocab);
  o.save_stats_path = scratch_.File("own-stats.safetensors");
  o.threads = 2;
  PrepareArtifact(*checkpoint_, o);
  // DetLLM's artifact: what its statistics give (byte for byte, the test above).
  const std::string detllm = FromDetllmStats(true);
  const test::ArtifactDiff d = test::DiffArtifacts(o.out_dir, detllm);
  std::vector<std::string> shifts;
  for (const std::string& c : d.config_differences) {
    if (c.find("/min_m:") == std::string::npos && c.find("/prepare/") == std::string::npos) {
      shifts.push_back(c);
    }
  }
  EXPECT_TRUE(shifts.empty()) << test::Join(shifts);
  EXPECT_GE(d.int8_identical(), 0.9999) << test::Join(d.tensor_differences);
  EXPECT_GE(d.worst_int8_identical, 0.999) << d.worst_int8_tensor;
  EXPECT_LE(static_cast<double>(d.int64_different), 0.005 * static_cast<double>(d.int64_total));
  EXPECT_EQ(d.int16_different, 0);
  std::printf(
      "[ measured ] qwen3-tiny-hd128-tied: int8 %.6f%% identical (worst tensor %.4f%%), "
      "%lld of %lld int64 constants differ\n",
      100 * d.int8_identical(), 100 * d.worst_int8_identical,
      static_cast<long long>(d.int64_different), static_cast<long long>(d.int64_total));
  // The statistics themselves.
  const CalibStats ours = LoadCalibStats(o.save_stats_path, checkpoint_->config());
  const CalibStats theirs = LoadCalibStats(
      CaseDir("qwen3-tiny-hd128-tied") + "/detllm_stats.safetensors", checkpoint_->config());
  const std::vector<std::pair<const std::vector<float>*, const std::vector<float>*>> pairs = {
      {&ours.k_chan_max, &theirs.k_chan_max}, {&ours.q_chan_max, &theirs.q_chan_max},
      {&ours.v_max, &theirs.v_max},           {&ours.attn_in_max, &theirs.attn_in_max},
      {&ours.mlp_in_max, &theirs.mlp_in_max}, {&ours.down_in_max, &theirs.down_in_max},
      {&ours.o_in_max, &theirs.o_in_max}};
  for (size_t p = 0; p < pairs.size(); ++p) {
    for (size_t i = 0; i < pairs[p].first->size(); ++i) {
      const double a = (*pairs[p].first)[i], b = (*pairs[p].second)[i];
      ASSERT_LE(std::fabs(a / b - 1.0), kMaxStatRelError) << CalibStatNames()[p] << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace dv
