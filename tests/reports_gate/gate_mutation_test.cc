// The gate can fail: a configuration whose logits differ by one unit in one value at one step
// must be caught, named, and located at that step.
//
// `detverify run` records quick.yaml's reference configurations. This program then runs the
// batch-1 configuration through the engine library itself, keeping every step's int32 logits,
// checks that rehashing them reproduces the recorded chains, adds 1 to one logit at one step,
// rehashes, and records the result as a run of another configuration. The gate must exit 1
// naming that configuration and that step; the token chain is unchanged (the recorded tokens are
// kept), so it must also say that the tokens agree.
#include <gtest/gtest.h>

#include <climits>
#include <span>

#include "base/hash_chain.h"
#include "engine/backends/backend_registry.h"
#include "engine/generate.h"
#include "harness/plan_builder.h"
#include "harness/scenario.h"
#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::Detverify;
using fleet_testing::ScratchDir;

struct Generation {
  std::vector<int32_t> tokens;
  std::vector<std::vector<int32_t>> logits;  // [steps][vocab]
};

// Runs `scenario`'s prompt alone (batch 1, whole prompt at once) on the reference backend.
Generation GenerateBatchOne(const harness::Scenario& scenario) {
  const harness::ResolvedModel model = harness::ResolveModel(scenario);
  const std::vector<int32_t> prompt = harness::ResolvePrompt(scenario, model);
  auto backend = MakeBackend("reference");
  IntQwen3 int_model(model.artifact->weights(), *backend);
  GenerationOptions options;
  options.max_new = scenario.max_new;
  options.keep_logits = true;
  std::vector<RowResult> rows = GenerateGreedy(int_model, {prompt}, options);
  return {rows.at(0).tokens, rows.at(0).logits};
}

// Every step's chain states over `logits` and `tokens` (SPEC §7: logits and token chains).
std::vector<db::StepRecord> Rehash(const std::vector<std::vector<int32_t>>& logits,
                                   const std::vector<int32_t>& tokens) {
  HashChain logits_chain, token_chain;
  std::vector<db::StepRecord> steps;
  for (size_t i = 0; i < logits.size(); ++i) {
    logits_chain.UpdateLogits(std::span<const int32_t>(logits[i]));
    token_chain.UpdateToken(tokens[i]);
    steps.push_back({static_cast<int64_t>(i), tokens[i], logits_chain.Hex(), token_chain.Hex()});
  }
  return steps;
}

class GateMutation : public ::testing::TestWithParam<int64_t> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir("gate-mutation");
    scenario_path_ = fleet_testing::SourceDir() + "/scenarios/quick.yaml";
    real_db_ = dir_->File("real.db");
    const auto r = Detverify({"run", scenario_path_, "--db", real_db_, "--config", "int8-ref-b1",
                              "--config", "int8-ref-split"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    generation_ = new Generation(GenerateBatchOne(harness::LoadScenario(scenario_path_)));
  }
  static void TearDownTestSuite() {
    delete generation_;
    delete dir_;
  }

  static ScratchDir* dir_;
  static std::string scenario_path_, real_db_;
  static Generation* generation_;
};

ScratchDir* GateMutation::dir_ = nullptr;
std::string GateMutation::scenario_path_;
std::string GateMutation::real_db_;
Generation* GateMutation::generation_ = nullptr;

TEST_P(GateMutation, OneUnitInOneLogitAtOneStepFailsTheGate) {
  const int64_t step = GetParam();
  const db::RunStore real = db::RunStore::OpenReadOnly(real_db_);
  const std::vector<db::RunRecord> runs =
      real.Runs(real.Scenarios().at(0).id, db::StepLoading::kWithSteps);
  const db::RunRecord* b1 = nullptr;
  for (const db::RunRecord& r : runs) {
    if (r.configuration == "int8-ref-b1") b1 = &r;
  }
  ASSERT_NE(b1, nullptr);
  ASSERT_GT(static_cast<int64_t>(generation_->logits.size()), step);

  // The library run reproduces the recorded chains exactly: the mutation is the only difference.
  ASSERT_EQ(Rehash(generation_->logits, generation_->tokens), b1->steps);

  // One unit in one value that is not the step's greedy pick, so the tokens stay the same.
  std::vector<std::vector<int32_t>> mutated = generation_->logits;
  std::vector<int32_t>& row = mutated[static_cast<size_t>(step)];
  const size_t at =
      static_cast<size_t>(generation_->tokens[static_cast<size_t>(step)] + 1) % row.size();
  ASSERT_LT(row[at], INT32_MAX);
  row[at] += 1;
  const std::vector<db::StepRecord> steps = Rehash(mutated, generation_->tokens);

  db::RunRecord run = *b1;
  run.id.clear();
  run.configuration = "int8-ref-b4";
  nlohmann::json config = nlohmann::json::parse(run.config_json);
  config["name"] = run.configuration;
  config["batch"]["size"] = 4;
  run.config_json = config.dump();
  run.steps = steps;
  run.final_logits_chain = steps.back().logits_chain;
  run.final_token_chain = steps.back().token_chain;

  const std::string db = dir_->File("mutated-" + std::to_string(step) + ".db");
  {
    db::RunStore store = db::RunStore::Open(db);
    for (const db::RunRecord& r : runs) store.RecordRun(r);
    store.RecordRun(run);
  }
  const auto agree = Detverify({"gate", real_db_});
  EXPECT_EQ(agree.code, 0) << agree.out;
  const auto r = Detverify({"gate", db, "--junit", dir_->File("junit.xml")});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("int8-ref-b4: logits chain leaves int8-ref-b1's at step " +
                       std::to_string(step) + "; tokens agree"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("int8-ref-split:"), std::string::npos) << "the unchanged rows pass";
  const std::string junit = fleet_testing::ReadFile(dir_->File("junit.xml"));
  EXPECT_NE(junit.find("failures=\"1\""), std::string::npos) << junit;
}

INSTANTIATE_TEST_SUITE_P(Steps, GateMutation, ::testing::Values(0, 17, 31));

}  // namespace
}  // namespace dv
