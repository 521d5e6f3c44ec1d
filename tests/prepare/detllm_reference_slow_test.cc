// prepare against DetLLM's prepare.py at Qwen3-0.6B's shapes (label slow: minutes): the synthetic
// qwen3-0.6b checkpoint made tied, prepared with the built-in calibration. Its statistics (the
// float64 forward's, pinned by their SHA-256) went through DetLLM's own quantization when
// tests/data/prepare/qwen3-0.6b-tied was made; prepare must write that artifact byte for byte --
// the RoPE tables of 40960 positions, the 151936-row embedding and head, every layer's smoothing.
#include <gtest/gtest.h>

#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_synth.h"
#include "engine/artifact.h"
#include "prepare/prepare_artifact.h"
#include "tests/prepare/prepare_test_support.h"

namespace dv {
namespace {

TEST(DetllmReference06b, OurStatisticsThroughDetllmsQuantizationAreOurArtifact) {
  const nlohmann::json expected =
      test::ReadJson(test::PrepareDataDir() + "/prepare/qwen3-0.6b-tied/expected.json");
  test_files::ScratchDir s("prepare-06b");
  WriteHfSynthCheckpoint(FindHfSynthPreset("qwen3-0.6b"), 0, s.File("untied"));
  test::WriteTiedCopy(s.File("untied"), s.File("tied"));
  std::filesystem::remove_all(s.File("untied"));
  const auto checkpoint = OpenHfCheckpoint(s.File("tied"));
  PrepareOptions o;
  o.out_dir = s.File("int8");
  o.calibration =
      BuiltinCalibration(checkpoint->config().vocab, kBuiltinCalibSamples, kBuiltinCalibLen);
  o.save_stats_path = s.File("stats.safetensors");
  o.recipe.model_id = "qwen3-0.6b";
  o.threads = 2;
  const PrepareResult r = PrepareArtifact(*checkpoint, o);
  EXPECT_EQ(Sha256FileHex(s.File("stats.safetensors")), expected["statistics_sha256"])
      << "the calibration forward changed: regenerate tests/data/prepare (--only-06b)";
  EXPECT_EQ(r.sha256, expected["detllm"]["model_safetensors_sha256"])
      << test::Join(test::TensorShaDifferences(o.out_dir, expected["detllm"]["tensor_sha256"]));
  EXPECT_EQ(r.rope_sensitive_entries, 0);
}

}  // namespace
}  // namespace dv
