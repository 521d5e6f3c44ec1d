// Compatibility acceptance: detverify reproduces every per-step hash of the DetLLM fixtures
// (expected.json, produced by DetLLM's own reference backend) on every execution path of this
// machine (the reference backend and the cpu backend at each ISA level; scripts/cross_test.sh
// runs this on aarch64 and big-endian s390x too), for the prompt alone, inside the fixture's
// 3-row batch (every row), with the fixture's split prefill, and token by token.
//
// tiny-a has W1 rows (the Q quantization's a*m wraps int64), tiny-w2 W2 rows (the
// down-projection input's a*m wraps), tiny-w2b W2 rows whose MLP residual add shifts by 64 to
// 66 (tests/data/detllm/README.md lists them all; test_wrap_rows.cc checks the lists).
#include <gtest/gtest.h>

#include "engine/artifact.h"
#include "engine/generate.h"
#include "tests/engine/test_support.h"

namespace dv {
namespace {

std::vector<int32_t> Ids(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

// Compares one row's result with a fixture chain block; reports the first divergent step.
void ExpectChainsMatch(const RowResult& got, const nlohmann::json& chains,
                       const nlohmann::json& tokens, const std::string& what) {
  const auto& lp = chains["logits"]["per_step"];
  const auto& tp = chains["tokens"]["per_step"];
  ASSERT_EQ(got.logits_chain.size(), lp.size()) << what;
  for (size_t i = 0; i < lp.size(); ++i) {
    ASSERT_EQ(got.logits_chain[i].substr(0, 16), lp[i].get<std::string>())
        << what << ": logits chain departs at step " << i;
    ASSERT_EQ(got.token_chain[i].substr(0, 16), tp[i].get<std::string>())
        << what << ": token chain departs at step " << i;
    ASSERT_EQ(got.tokens[i], tokens[i].get<int32_t>()) << what << ": token at step " << i;
  }
  EXPECT_EQ(got.logits_chain.back(), chains["logits"]["final"].get<std::string>()) << what;
  EXPECT_EQ(got.token_chain.back(), chains["tokens"]["final"].get<std::string>()) << what;
}

class CompatTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = test::FixtureDir(GetParam());
    expected_ = test::LoadJson(dir_ + "/expected.json");
    artifact_ = Artifact::Load(dir_);
  }
  // Runs the fixture prompt (or the whole batch) on every execution path with `split`.
  void ExpectEveryPath(const std::vector<std::vector<int32_t>>& prompts, int64_t split,
                       const std::string& what) {
    GenerationOptions opt;
    opt.max_new = expected_["steps"].get<int64_t>();
    opt.split = split;
    opt.keep_logits = prompts.size() == 1;
    for (const auto& [name, backend] : test::EveryExecutionPath()) {
      IntQwen3 model(artifact_->weights(), *backend);
      const auto res = GenerateGreedy(model, prompts, opt);
      if (prompts.size() == 1) {
        const auto first16 = [](const std::vector<int32_t>& v) {
          return std::vector<int32_t>(v.begin(), v.begin() + 16);
        };
        EXPECT_EQ(first16(res[0].logits.front()), Ids(expected_["step0_logits_first16"])) << name;
        EXPECT_EQ(first16(res[0].logits.back()), Ids(expected_["last_step_logits_first16"]))
            << name;
        ExpectChainsMatch(res[0], expected_["chains"], expected_["tokens"], what + " on " + name);
        continue;
      }
      const auto& layout = expected_["batch"]["row_layout"];
      for (size_t r = 0; r < layout.size(); ++r) {
        const bool ours = layout[r].value("is_fixture_prompt", false);
        const auto& block = ours ? expected_ : layout[r];
        ExpectChainsMatch(res[r], block["chains"], block["tokens"],
                          what + " row " + std::to_string(r) + " on " + name);
      }
    }
  }
  std::vector<int32_t> Prompt() const { return Ids(expected_["prompt_ids"]); }

  std::string dir_;
  nlohmann::json expected_;
  std::unique_ptr<Artifact> artifact_;
};

TEST_P(CompatTest, ArtifactIdentity) {
  EXPECT_EQ(artifact_->sha256(),
            expected_["artifact"]["model_safetensors_sha256"].get<std::string>());
  EXPECT_EQ(artifact_->config_sha256(),
            expected_["artifact"]["config_json_sha256"].get<std::string>());
}

TEST_P(CompatTest, PromptAloneEveryStep) { ExpectEveryPath({Prompt()}, 0, "prompt alone"); }

TEST_P(CompatTest, BatchWithCoPromptsEveryRow) {
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& row : expected_["batch"]["row_layout"]) {
    prompts.push_back(row.value("is_fixture_prompt", false) ? Prompt() : Ids(row["prompt_ids"]));
  }
  ExpectEveryPath(prompts, 0, "batch");
}

// Each co-prompt alone gives the chains it has in the batch (rows never see each other).
TEST_P(CompatTest, CoPromptsAloneEveryStep) {
  for (const auto& row : expected_["batch"]["row_layout"]) {
    if (row.value("is_fixture_prompt", false)) continue;
    GenerationOptions opt;
    opt.max_new = expected_["steps"].get<int64_t>();
    for (const auto& [name, backend] : test::EveryExecutionPath()) {
      IntQwen3 model(artifact_->weights(), *backend);
      const auto res = GenerateGreedy(model, {Ids(row["prompt_ids"])}, opt);
      ExpectChainsMatch(res[0], row["chains"], row["tokens"], "co-prompt alone on " + name);
    }
  }
}

TEST_P(CompatTest, SplitPrefillEveryStep) {
  const auto& split = expected_["checks"]["split_prefill"];
  ASSERT_EQ(split["prefill_tokens"].get<int64_t>() + split["then_single_tokens"].get<int64_t>(),
            expected_["prompt_len"].get<int64_t>());
  ExpectEveryPath({Prompt()}, split["prefill_tokens"].get<int64_t>(), "split prefill");
}

TEST_P(CompatTest, TokenByTokenEveryStep) { ExpectEveryPath({Prompt()}, 1, "token by token"); }

INSTANTIATE_TEST_SUITE_P(Fixtures, CompatTest, ::testing::ValuesIn(test::kDetllmFixtures),
                         test::FixtureParamName);

}  // namespace
}  // namespace dv
