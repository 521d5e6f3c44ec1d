// The quantization step after calibration is exact: given DetLLM's own calibration statistics,
// prepare writes DetLLM's artifact byte for byte (DetLLM's p-small fixture, tests/data/detllm/
// prepare: a checkpoint, the float32 statistics DetLLM's calibrate_kv_ranges collected, and the
// artifacts DetLLM's prepare() wrote, with smoothing on and off), and every config value but
// model_id. The artifact then runs in the integer engine to the per-step hashes DetLLM's own
// reference backend recorded (expected.json).
#include <gtest/gtest.h>

#include "checkpoint/hf_checkpoint.h"
#include "engine/artifact.h"
#include "engine/generate.h"
#include "prepare/calib_stats.h"
#include "prepare/prepare_artifact.h"
#include "tests/engine/test_support.h"
#include "tests/prepare/prepare_test_support.h"

namespace dv {
namespace {

struct Variant {
  const char* name;
  const char* artifact;  // DetLLM's artifact, relative to p-small/
  const char* expected;  // DetLLM's reference-backend run on it
  bool smooth;
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

const Variant kVariants[] = {
    {"smoothing", "detllm_artifact", "expected.json", true},
    {"nosmooth", "nosmooth/detllm_artifact", "nosmooth/expected.json", false},
};

class PSmallExact : public ::testing::TestWithParam<Variant> {
 protected:
  // Prepares p-small from DetLLM's statistics with the variant's options.
  std::string Prepare(int threads = 1) {
    const std::string dir = test::PSmallDir();
    const auto checkpoint = OpenHfCheckpoint(dir + "/hf");
    PrepareOptions o;
    o.out_dir = scratch_.File(std::string("out-") + std::to_string(threads));
    o.stats = LoadCalibStats(dir + "/calib_stats.safetensors", checkpoint->config());
    o.stats_source = dir + "/calib_stats.safetensors";
    o.recipe.smooth_acts = o.recipe.smooth_o = GetParam().smooth;
    o.recipe.calib_samples = 16;  // what DetLLM's config.json records
    o.recipe.calib_len = 64;
    o.recipe.model_id = "p-small";
    o.threads = threads;
    PrepareArtifact(*checkpoint, o);
    return o.out_dir;
  }
  std::string Want() const { return test::PSmallDir() + "/" + GetParam().artifact; }

  test_files::ScratchDir scratch_{"prepare-exact"};
};

TEST_P(PSmallExact, ModelSafetensorsIsDetllmsByteForByte) {
  const std::string got = Prepare();
  EXPECT_EQ(Sha256FileHex(got + "/model.safetensors"),
            Sha256FileHex(Want() + "/model.safetensors"));
  const test::ArtifactDiff d = test::DiffArtifacts(got, Want());
  EXPECT_EQ(d.int8_different + d.int16_different + d.int64_different, 0)
      << test::Join(d.tensor_differences);
}

TEST_P(PSmallExact, EveryConfigValueButModelIdIsDetllms) {
  const std::string got = Prepare();
  const test::ArtifactDiff d = test::DiffArtifacts(got, Want());
  EXPECT_TRUE(d.config_differences.empty()) << test::Join(d.config_differences);
  // DetLLM's keys come first, in DetLLM's order, then detverify's provenance.
  const nlohmann::ordered_json ours =
      nlohmann::ordered_json::parse(test_files::ReadFile(got + "/config.json"));
  const nlohmann::ordered_json theirs =
      nlohmann::ordered_json::parse(test_files::ReadFile(Want() + "/config.json"));
  std::vector<std::string> our_keys, their_keys;
  for (const auto& [k, v] : ours.items()) our_keys.push_back(k);
  for (const auto& [k, v] : theirs.items()) their_keys.push_back(k);
  ASSERT_EQ(our_keys.size(), their_keys.size() + 1);
  EXPECT_EQ(std::vector<std::string>(our_keys.begin(), our_keys.end() - 1), their_keys);
  EXPECT_EQ(our_keys.back(), "prepare");
  EXPECT_TRUE(ours["prepare"]["calibration"]["kind"] == "statistics");
}

TEST_P(PSmallExact, ThreadCountsGiveTheSameBytes) {
  const std::string one = Sha256FileHex(Prepare(1) + "/model.safetensors");
  EXPECT_EQ(Sha256FileHex(Prepare(3) + "/model.safetensors"), one);
}

// The prepared artifact runs to DetLLM's per-step hashes (its 64-step greedy run and both
// co-prompts) on every execution path of this machine.
TEST_P(PSmallExact, RunsToDetllmsHashes) {
  const auto artifact = Artifact::Load(Prepare());
  const nlohmann::json expected = test::ReadJson(test::PSmallDir() + "/" + GetParam().expected);
  EXPECT_EQ(artifact->sha256(), expected["artifact"]["model_safetensors_sha256"]);
  GenerationOptions opt;
  opt.max_new = expected["steps"].get<int64_t>();
  std::vector<std::vector<int32_t>> prompts;
  std::vector<const nlohmann::json*> blocks;
  for (const auto& row : expected["batch"]["row_layout"]) {
    const bool ours = row.value("is_fixture_prompt", false);
    prompts.push_back(
        (ours ? expected["prompt_ids"] : row["prompt_ids"]).get<std::vector<int32_t>>());
    blocks.push_back(ours ? &expected : &row);
  }
  for (const auto& [name, backend] : test::EveryExecutionPath()) {
    IntQwen3 model(artifact->weights(), *backend);
    const auto res = GenerateGreedy(model, prompts, opt);
    for (size_t r = 0; r < res.size(); ++r) {
      const nlohmann::json& chains = (*blocks[r])["chains"];
      EXPECT_EQ(res[r].logits_chain.back(), chains["logits"]["final"]) << name << " row " << r;
      EXPECT_EQ(res[r].token_chain.back(), chains["tokens"]["final"]) << name << " row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PSmall, PSmallExact, ::testing::ValuesIn(kVariants),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace dv
