// One verdict per scenario (verdict/verdict.h), read by the run table, the reports, the gate and
// the attestation. The cases here are those where the run table and the gate used to give
// different answers for the same runs: each is judged once, and the table's mark, the gate's
// pass/fail, the report's badge and the attestation's `agree` are checked to be that one answer.
#include "verdict/verdict.h"

#include <gtest/gtest.h>

#include <cctype>

#include "reports/fleet_results.h"
#include "reports/gate.h"
#include "reports/markdown_report.h"
#include "tests/reports/fleet_fixtures.h"
#include "verdict/run_table.h"

namespace dv::verdict {
namespace {

using fleet_testing::DepartFrom;
using fleet_testing::MakeArtifact;
using fleet_testing::MakeMachine;
using fleet_testing::MakeRun;
using fleet_testing::MakeScenario;
using fleet_testing::MakeSteps;
using fleet_testing::ScratchDir;

// The scenario "demo" (32 steps) with `published` hashes in its canonical text.
db::ScenarioRecord ScenarioWith(const std::vector<ExpectedHashes>& published) {
  nlohmann::json text = {{"name", "demo"}, {"max_new", 32}, {"expect", nlohmann::json::array()}};
  for (const ExpectedHashes& e : published) {
    text["expect"].push_back(
        {{"artifact", e.artifact}, {"steps", e.steps}, {"logits", e.logits}, {"tokens", e.tokens}});
  }
  return db::ScenarioRecord{"", "demo", text.dump()};
}

class OneVerdict : public ::testing::Test {
 protected:
  // Records `runs` in a DB and reads it back as every consumer does; checks that the run table,
  // the gate, the Markdown report and the attestation's verdict all say `agree`.
  void ExpectOneAnswer(const std::vector<db::RunRecord>& runs, bool agree) {
    const std::string path = dir_.File("r" + std::to_string(n_++) + ".db");
    {
      db::RunStore store = db::RunStore::Open(path);
      for (const db::RunRecord& r : runs) store.RecordRun(r);
    }
    const db::RunStore store = db::RunStore::OpenReadOnly(path);
    const reports::FleetResults fleet = reports::LoadFleetResults(store);
    ASSERT_EQ(fleet.scenarios.size(), 1u);
    const reports::ScenarioResults& s = fleet.scenarios[0];
    EXPECT_EQ(s.verdict.agree, agree);
    EXPECT_EQ(s.table.verdict.agree, agree) << "run table";
    const std::string table = RenderRunTableText(s.table);
    EXPECT_NE(table.find(agree ? "\u2705" : "\u274c"), std::string::npos) << table;
    const reports::GateResult gate = reports::EvaluateGate(fleet);
    EXPECT_EQ(gate.scenarios.at(0).passed, agree) << "gate";
    EXPECT_EQ(gate.passed, agree);
    const std::string md = reports::RenderMarkdownReport(fleet);
    EXPECT_NE(md.find(agree ? "**gate: \u2705 pass**" : "**gate: \u274c fail**"), std::string::npos)
        << md;
    // The table's verdict line in the report carries the same mark.
    const std::string mark = agree ? " \u2705**" : " \u274c**";
    EXPECT_NE(md.find(mark), std::string::npos) << md;
    EXPECT_EQ(s.verdict.passed, agree) << "the attestation's verdict.agree";
  }

  ScratchDir dir_{"verdict"};
  int n_ = 0;
  db::ScenarioRecord scenario_ = MakeScenario("demo", 32);
  db::MachineRecord machine_ = MakeMachine("Testbox A");
  db::ArtifactRecord artifact_ = MakeArtifact();
  std::vector<db::StepRecord> base_ = MakeSteps("int8", 32);
};

TEST_F(OneVerdict, AgreeingRowsAgreeEverywhere) {
  ExpectOneAnswer(
      {MakeRun(scenario_, machine_, artifact_, "int8-ref-b1", "int8", "reference", base_),
       MakeRun(scenario_, machine_, artifact_, "int8-cpu-b8", "int8", "cpu", base_, "ok", "", 8)},
      true);
}

// The table used to count only the hashes and show "1 unique hash ✅" next to a crashed row;
// the gate failed the scenario.
TEST_F(OneVerdict, ACrashedInt8RowFailsEverywhere) {
  const std::vector<db::RunRecord> runs = {
      MakeRun(scenario_, machine_, artifact_, "int8-ref-b1", "int8", "reference", base_),
      MakeRun(scenario_, machine_, artifact_, "int8-cpu-b8", "int8", "cpu", {}, "crashed",
              "signal 11 (Segmentation fault)", 8)};
  ExpectOneAnswer(runs, false);
  const ScenarioVerdict v = JudgeScenario(runs, {});
  EXPECT_EQ(v.int8_unique_logits, 1);
  EXPECT_EQ(v.rows[1].outcome, RowOutcome::kNoHash);
  EXPECT_EQ(v.rows[1].message, "produced no hash: crashed: signal 11 (Segmentation fault)");
  EXPECT_EQ(Int8VerdictText(v), "1 unique hash, 1 row without a hash");
}

// The table counted a row with status ok but no steps as an empty hash (2 unique hashes); the
// gate said the row recorded no steps. Now: no hash, one unique hash among the others.
TEST_F(OneVerdict, AnOkRowWithoutStepsHasNoHash) {
  std::vector<db::RunRecord> runs = {
      MakeRun(scenario_, machine_, artifact_, "int8-ref-b1", "int8", "reference", base_),
      MakeRun(scenario_, machine_, artifact_, "int8-cpu-b1", "int8", "cpu", {})};
  ExpectOneAnswer(runs, false);
  const ScenarioVerdict v = JudgeScenario(runs, {});
  EXPECT_EQ(v.int8_unique_logits, 1);
  EXPECT_EQ(v.rows[1].message, "status ok but no steps recorded");
}

// Equal hashes from two artifacts: the table showed "1 unique hash ✅", the gate refused to
// compare across artifacts.
TEST_F(OneVerdict, RowsOfTwoArtifactsDoNotAgree) {
  const db::ArtifactRecord other = MakeArtifact("artifact:other");
  const std::vector<db::RunRecord> runs = {
      MakeRun(scenario_, machine_, artifact_, "int8-ref-b1", "int8", "reference", base_),
      MakeRun(scenario_, machine_, other, "int8-cpu-b1", "int8", "cpu", base_)};
  ExpectOneAnswer(runs, false);
  const ScenarioVerdict v = JudgeScenario(runs, {});
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_NE(v.problems[0].find("the int8 runs used 2 different artifacts"), std::string::npos);
  EXPECT_EQ(Int8VerdictText(v), "1 unique hash, 2 artifacts");
}

// Only skipped int8 rows: the table said "no int8 runs" without a mark, the gate failed.
TEST_F(OneVerdict, NoInt8HashFailsEverywhere) {
  const std::vector<db::RunRecord> runs = {
      MakeRun(scenario_, machine_, artifact_, "int8-cuda-b1", "int8", "cuda", {}, "skipped",
              "no CUDA backend on this machine"),
      MakeRun(scenario_, machine_, artifact_, "fp32-cpu-b1", "float", "cpu", base_)};
  ExpectOneAnswer(runs, false);
  EXPECT_EQ(Int8VerdictText(JudgeScenario(runs, {})), "no int8 hash");
}

// Divergent rows: the same row fails with the same step in the table's notes and the gate.
TEST_F(OneVerdict, DivergenceIsNamedOnceWithItsStep) {
  const std::vector<db::RunRecord> runs = {
      MakeRun(scenario_, machine_, artifact_, "int8-ref-b1", "int8", "reference", base_),
      MakeRun(scenario_, machine_, artifact_, "int8-cpu-b8", "int8", "cpu",
              DepartFrom(base_, 17, std::nullopt), "ok", "", 8)};
  ExpectOneAnswer(runs, false);
  const ScenarioVerdict v = JudgeScenario(runs, {});
  EXPECT_EQ(v.rows[1].outcome, RowOutcome::kDiverges);
  EXPECT_EQ(v.rows[1].message, "logits chain leaves int8-ref-b1's at step 17; tokens agree");
  const RunTable table = BuildRunTable("demo", runs, v);
  EXPECT_NE(RenderRunTableText(table).find(
                "int8-cpu-b8: logits chain leaves int8-ref-b1's at step 17; tokens agree"),
            std::string::npos);
}

// A DB whose scenario publishes hashes for step 16: the report's published column and the gate's
// note come from the same check.
TEST_F(OneVerdict, PublishedHashesReachTheReportAndTheGateAlike) {
  const ExpectedHashes right{artifact_.id.substr(0, 12), 16, base_[15].logits_chain.substr(0, 12),
                             base_[15].token_chain.substr(0, 12)};
  ExpectedHashes wrong = right;
  wrong.tokens = base_[20].token_chain.substr(0, 12);
  for (const bool match : {true, false}) {
    const db::ScenarioRecord scenario = ScenarioWith({match ? right : wrong});
    const std::string path = dir_.File(match ? "right.db" : "wrong.db");
    {
      db::RunStore store = db::RunStore::Open(path);
      store.RecordRun(
          MakeRun(scenario, machine_, artifact_, "int8-ref-b1", "int8", "reference", base_));
    }
    const db::RunStore store = db::RunStore::OpenReadOnly(path);
    const reports::FleetResults fleet = reports::LoadFleetResults(store);
    const reports::ScenarioResults& s = fleet.scenarios.at(0);
    EXPECT_EQ(s.table.rows.at(0).published, match ? HashMatch::kMatch : HashMatch::kMismatch);
    const reports::GateResult gate = reports::EvaluateGate(fleet);
    EXPECT_TRUE(gate.passed) << "published hashes are reported, not gated";
    const auto& notes = gate.scenarios.at(0).notes;
    const bool noted = !notes.empty() && notes.back().find("published hashes") != std::string::npos;
    EXPECT_EQ(noted, !match);
    const std::string md = reports::RenderMarkdownReport(fleet);
    EXPECT_NE(md.find(match ? "| \u2705 |" : "| \u274c |"), std::string::npos) << md;
  }
}

// Published hashes are checked at the step they name. The table used to compare them only when
// they named the last step (so a scenario publishing step 16 of a 32-step run showed nothing),
// while --expect checked the named step.
TEST(PublishedHashes, AreCheckedAtTheStepTheyName) {
  const db::ScenarioRecord s = MakeScenario("demo", 32);
  const db::MachineRecord m = MakeMachine("Testbox A");
  const db::ArtifactRecord a = MakeArtifact();
  const std::vector<db::StepRecord> base = MakeSteps("int8", 32);
  const db::RunRecord b1 = MakeRun(s, m, a, "int8-ref-b1", "int8", "reference", base);
  const ExpectedHashes at16{a.id.substr(0, 12), 16, base[15].logits_chain.substr(0, 12),
                            base[15].token_chain.substr(0, 12)};
  ScenarioVerdict v = JudgeScenario({b1}, {at16});
  EXPECT_TRUE(v.published_known);
  EXPECT_EQ(v.rows[0].published, HashMatch::kMatch);
  EXPECT_TRUE(v.published_ok);
  // The same entry as an --expect: passes on the same rule.
  const std::vector<ExpectedHashes> expect16 = {at16};
  v = JudgeScenario({b1}, {}, &expect16);
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.rows[0].expected, HashMatch::kMatch);

  // Wrong hashes at step 16: reported (❌, a note), failing only as an expectation.
  ExpectedHashes wrong = at16;
  wrong.logits = base[16].logits_chain.substr(0, 12);
  v = JudgeScenario({b1}, {wrong});
  EXPECT_EQ(v.rows[0].published, HashMatch::kMismatch);
  EXPECT_FALSE(v.published_ok);
  EXPECT_TRUE(v.agree) << "published hashes are reported, not gated";
  EXPECT_TRUE(v.passed);
  ASSERT_FALSE(v.notes.empty());
  EXPECT_NE(v.notes.back().find("published hashes"), std::string::npos);
  const std::vector<ExpectedHashes> expect_wrong = {wrong};
  v = JudgeScenario({b1}, {}, &expect_wrong);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.rows[0].message.rfind("after 16 steps: logits ", 0), 0u) << v.rows[0].message;

  // A row that ends before the named step cannot show it: "short", not a mismatch.
  ExpectedHashes late = at16;
  late.steps = 64;
  v = JudgeScenario({b1}, {late});
  EXPECT_EQ(v.rows[0].published, HashMatch::kTooShort);
  EXPECT_TRUE(v.published_ok);
  const std::vector<ExpectedHashes> expect_late = {late};
  v = JudgeScenario({b1}, {}, &expect_late);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.rows[0].message, "has 32 steps; --expect names step 64");
}

// Hex prefixes compare without regard to case, in the table as in the gate.
TEST(PublishedHashes, PrefixesIgnoreCase) {
  const db::ScenarioRecord s = MakeScenario("demo", 8);
  const db::MachineRecord m = MakeMachine("Testbox A");
  const db::ArtifactRecord a = MakeArtifact();
  const std::vector<db::StepRecord> base = MakeSteps("int8", 8);
  const db::RunRecord b1 = MakeRun(s, m, a, "int8-ref-b1", "int8", "reference", base);
  auto upper = [](std::string t) {
    for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return t;
  };
  const ExpectedHashes e{upper(a.id.substr(0, 16)), 8, upper(base[7].logits_chain.substr(0, 16)),
                         upper(base[7].token_chain.substr(0, 16))};
  EXPECT_EQ(JudgeScenario({b1}, {e}).rows[0].published, HashMatch::kMatch);
  const std::vector<ExpectedHashes> expect = {e};
  EXPECT_TRUE(JudgeScenario({b1}, {}, &expect).passed);
}

// A float row is contrast whatever it shows; skipped rows are listed, never failing.
TEST(RowOutcomes, FloatAndSkippedRowsAreNotJudged) {
  const db::ScenarioRecord s = MakeScenario("demo", 8);
  const db::MachineRecord m = MakeMachine("Testbox A");
  const db::ArtifactRecord a = MakeArtifact();
  const std::vector<db::StepRecord> base = MakeSteps("int8", 8);
  const ScenarioVerdict v =
      JudgeScenario({MakeRun(s, m, a, "int8-ref-b1", "int8", "reference", base),
                     MakeRun(s, m, a, "fp32-cpu-b1", "float", "cpu", DepartFrom(base, 2, 3)),
                     MakeRun(s, m, a, "fp16-cuda-b1", "float", "cuda", {}, "crashed", "signal 6"),
                     MakeRun(s, m, a, "int8-cuda-b1", "int8", "cuda", {}, "skipped", "no GPU")},
                    {});
  EXPECT_TRUE(v.agree);
  EXPECT_EQ(v.rows[1].outcome, RowOutcome::kContrast);
  EXPECT_EQ(v.rows[2].outcome, RowOutcome::kContrast);
  EXPECT_FALSE(v.rows[2].failed) << "a crashed float row does not fail the int8 verdict";
  EXPECT_EQ(v.rows[3].outcome, RowOutcome::kSkipped);
  EXPECT_EQ(v.float_with_hashes, 1);
  ASSERT_TRUE(v.rows[1].divergence.has_value());
  EXPECT_EQ(v.rows[1].divergence->logits_step, 2);
}

}  // namespace
}  // namespace dv::verdict
