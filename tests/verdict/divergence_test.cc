// Chain comparison and baseline choice (verdict/divergence.h) on runs built from records.
#include "verdict/divergence.h"

#include <gtest/gtest.h>

#include "tests/reports/fleet_fixtures.h"

namespace dv::verdict {
namespace {

using fleet_testing::DepartFrom;
using fleet_testing::MakeArtifact;
using fleet_testing::MakeMachine;
using fleet_testing::MakeRun;
using fleet_testing::MakeScenario;
using fleet_testing::MakeSteps;

TEST(CompareChains, IdenticalChainsHaveNoDivergence) {
  const auto base = MakeSteps("a", 10);
  const ChainDivergence d = CompareChains(base, base);
  EXPECT_TRUE(d.Identical());
  EXPECT_EQ(d.compared_steps, 10);
}

TEST(CompareChains, FindsTheFirstStepOfEachChain) {
  const auto base = MakeSteps("a", 32);
  for (const int64_t at : {0, 1, 17, 31}) {
    const ChainDivergence d = CompareChains(base, DepartFrom(base, at, std::nullopt));
    ASSERT_TRUE(d.logits_step.has_value()) << at;
    EXPECT_EQ(*d.logits_step, at);
    EXPECT_FALSE(d.token_step.has_value()) << "tokens still agree when only logits moved";
  }
  const ChainDivergence both = CompareChains(base, DepartFrom(base, 3, 9));
  EXPECT_EQ(both.logits_step, 3);
  EXPECT_EQ(both.token_step, 9);
}

TEST(CompareChains, ShorterRunDepartsWhereItEnds) {
  const auto base = MakeSteps("a", 32);
  const auto shorter = std::vector<db::StepRecord>(base.begin(), base.begin() + 20);
  const ChainDivergence d = CompareChains(base, shorter);
  EXPECT_EQ(d.compared_steps, 20);
  EXPECT_EQ(d.logits_step, 20);
  EXPECT_EQ(d.token_step, 20);
}

TEST(FindBaselineRun, PrefersBatchOneOnTheReferenceBackend) {
  const auto s = MakeScenario("demo", 4);
  const auto m = MakeMachine("cpu");
  const auto a = MakeArtifact();
  const auto steps = MakeSteps("x", 4);
  std::vector<db::RunRecord> runs = {
      MakeRun(s, m, a, "fp32-cpu-b1", "float", "cpu", steps),
      MakeRun(s, m, a, "int8-cpu-b8", "int8", "cpu", steps, "ok", "", 8),
      MakeRun(s, m, a, "int8-cpu-b1", "int8", "cpu", steps),
      MakeRun(s, m, a, "int8-ref-b1", "int8", "reference", {}, "crashed", "signal 6"),
      MakeRun(s, m, a, "int8-ref-b1", "int8", "reference", steps),
  };
  EXPECT_EQ(FindBaselineRun(runs), 4u);
  runs.pop_back();
  EXPECT_EQ(FindBaselineRun(runs), 2u);
  runs.erase(runs.begin() + 2);
  EXPECT_EQ(FindBaselineRun(runs), 1u) << "no batch-1 row: any int8 row with steps";
  runs.erase(runs.begin() + 1);
  EXPECT_FALSE(FindBaselineRun(runs).has_value());
}

}  // namespace
}  // namespace dv::verdict
