// The float64 calibration forward against DetLLM's (its float32 torch forward, which sums in
// another order): on DetLLM's p-small fixture, with DetLLM's calibration ids, every statistic
// within kMaxStatRelError of DetLLM's, and the artifact within the bounds the issue states --
// every config shift equal, >= 99.99% of int8 weight bytes identical and >= 99.9% in every
// tensor, at most 0.5% of the int64 constants different, the RoPE tables identical.
#include <gtest/gtest.h>

#include <cmath>

#include "checkpoint/hf_checkpoint.h"
#include "engine/artifact.h"
#include "prepare/calib_forward.h"
#include "prepare/calib_stats.h"
#include "prepare/calibration_set.h"
#include "prepare/prepare_artifact.h"
#include "tests/prepare/prepare_test_support.h"

namespace dv {
namespace {

// DetLLM's statistics are float32 maxima of a float32 forward (relative rounding ~6e-8 per
// operation over a few hundred operations); measured on p-small: 1.9e-6 at worst.
constexpr double kMaxStatRelError = 1e-5;
constexpr double kMinInt8Identical = 0.9999;       // of all int8 weight bytes
constexpr double kMinInt8IdenticalTensor = 0.999;  // in every int8 tensor
constexpr double kMaxInt64Different = 0.005;       // of all int64 constants

struct CalibFixture {
  std::unique_ptr<FloatCheckpoint> checkpoint;
  CalibrationSet calibration;
};

CalibFixture PSmall() {
  const std::string dir = test::PSmallDir();
  CalibFixture f;
  f.checkpoint = OpenHfCheckpoint(dir + "/hf");
  f.calibration = LoadCalibrationIds(dir + "/calib_ids.json", 0, 0, f.checkpoint->config().vocab);
  return f;
}

std::vector<float> Slot(const CalibStats& s, const std::string& name) {
  if (name == "k_chan_max") return s.k_chan_max;
  if (name == "q_chan_max") return s.q_chan_max;
  if (name == "v_max") return s.v_max;
  if (name == "attn_in_max") return s.attn_in_max;
  if (name == "mlp_in_max") return s.mlp_in_max;
  if (name == "down_in_max") return s.down_in_max;
  return s.o_in_max;
}

TEST(CalibForward, PSmallStatisticsMatchDetllms) {
  const CalibFixture f = PSmall();
  ASSERT_EQ(f.calibration.samples(), 16);
  ASSERT_EQ(f.calibration.max_len(), 64);
  const CalibStats ours = CollectCalibStats(*f.checkpoint, f.calibration, {});
  const CalibStats theirs =
      LoadCalibStats(test::PSmallDir() + "/calib_stats.safetensors", f.checkpoint->config());
  for (const std::string& name : CalibStatNames()) {
    const std::vector<float> a = Slot(ours, name), b = Slot(theirs, name);
    ASSERT_EQ(a.size(), b.size()) << name;
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_GT(b[i], 0.0f) << name << "[" << i << "]";
      const double rel = std::fabs(static_cast<double>(a[i]) / b[i] - 1.0);
      if (rel > worst) worst = rel, at = i;
    }
    EXPECT_LE(worst, kMaxStatRelError)
        << name << "[" << at << "]: ours " << a[at] << ", DetLLM's " << b[at];
  }
}

TEST(CalibForward, ThreadCountsGiveTheSameStatistics) {
  const CalibFixture f = PSmall();
  test_files::ScratchDir scratch("calib-threads");
  CalibForwardOptions one;
  SaveCalibStats(CollectCalibStats(*f.checkpoint, f.calibration, one), scratch.File("1"));
  for (int threads : {2, 3, 5}) {
    CalibForwardOptions many;
    many.threads = threads;
    SaveCalibStats(CollectCalibStats(*f.checkpoint, f.calibration, many),
                   scratch.File(std::to_string(threads)));
    EXPECT_EQ(Sha256FileHex(scratch.File(std::to_string(threads))),
              Sha256FileHex(scratch.File("1")))
        << threads << " threads";
  }
}

class PSmallEndToEnd : public ::testing::TestWithParam<bool> {};

// With its own calibration forward, prepare lands within the stated bounds of DetLLM's artifact.
TEST_P(PSmallEndToEnd, WithinTheBoundsOfDetllmsArtifact) {
  const bool smooth = GetParam();
  const CalibFixture f = PSmall();
  test_files::ScratchDir scratch("calib-e2e");
  PrepareOptions o;
  o.out_dir = scratch.File("ours");
  o.calibration = f.calibration;
  o.recipe.smooth_acts = o.recipe.smooth_o = smooth;
  o.recipe.calib_samples = 16;
  o.recipe.calib_len = 64;
  o.recipe.model_id = "p-small";
  o.threads = 2;
  PrepareArtifact(*f.checkpoint, o);
  const std::string want =
      test::PSmallDir() + (smooth ? "/detllm_artifact" : "/nosmooth/detllm_artifact");
  const test::ArtifactDiff d = test::DiffArtifacts(o.out_dir, want);
  // Shifts are config values; min_m (DetLLM's diagnostic smallest mantissa) may move with a
  // mantissa.
  std::vector<std::string> shifts;
  for (const std::string& c : d.config_differences) {
    if (c.find("/min_m:") == std::string::npos) shifts.push_back(c);
  }
  EXPECT_TRUE(shifts.empty()) << test::Join(shifts);
  EXPECT_GE(d.int8_identical(), kMinInt8Identical) << test::Join(d.tensor_differences);
  EXPECT_GE(d.worst_int8_identical, kMinInt8IdenticalTensor) << d.worst_int8_tensor;
  EXPECT_LE(static_cast<double>(d.int64_different),
            kMaxInt64Different * static_cast<double>(d.int64_total))
      << test::Join(d.tensor_differences);
  EXPECT_EQ(d.int16_different, 0) << "RoPE tables";
  std::printf(
      "[ measured ] p-small %s: int8 %.6f%% identical (worst tensor %.4f%% %s), "
      "%lld of %lld int64 constants differ\n",
      smooth ? "smoothing" : "nosmooth", 100 * d.int8_identical(), 100 * d.worst_int8_identical,
      d.worst_int8_tensor.c_str(), static_cast<long long>(d.int64_different),
      static_cast<long long>(d.int64_total));
}

INSTANTIATE_TEST_SUITE_P(Smoothing, PSmallEndToEnd, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "on" : "off"; });

}  // namespace
}  // namespace dv
