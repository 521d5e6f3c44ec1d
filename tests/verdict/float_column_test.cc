// The float column of the run table, the Markdown and the HTML report: "N unique hashes ❌"
// under it, the float rows' token agreement and first token divergence, the step-0 cushion; and
// that none of it reaches the verdict -- the gate and the attestation's verdict ignore float rows
// whether they agree, disagree or crash. The cushion's expected numbers are worked out by hand
// below; tests/harness/float_e2e_test.cc checks the real engine's against numpy.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "base/sha256.h"
#include "reports/fleet_results.h"
#include "reports/gate.h"
#include "reports/html_report.h"
#include "reports/markdown_report.h"
#include "tests/reports/fleet_fixtures.h"
#include "verdict/run_table.h"
#include "verdict/verdict.h"

namespace dv::verdict {
namespace {

using fleet_testing::DepartFrom;
using fleet_testing::MakeArtifact;
using fleet_testing::MakeMachine;
using fleet_testing::MakeRun;
using fleet_testing::MakeScenario;
using fleet_testing::MakeSteps;
using fleet_testing::ScratchDir;

std::vector<uint8_t> LittleEndian(const std::vector<float>& values) {
  std::vector<uint8_t> bytes;
  for (float v : values) {
    const auto bits = std::bit_cast<uint32_t>(v);
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<uint8_t>(bits >> (8 * b)));
  }
  return bytes;
}

// A float run whose step 0 hashes `logits` as the demo chain does (SHA-256 of the chain's start,
// SHA-256("detllm-demo-v1"), followed by the little-endian float32 bytes), its later steps
// those of `tail`, its tokens departing from `tokens`' at `tokens_at`.
db::RunRecord FloatRun(const std::string& name, const std::vector<float>& logits,
                       const std::vector<db::StepRecord>& tokens,
                       std::optional<int64_t> tokens_at) {
  std::vector<db::StepRecord> steps = DepartFrom(tokens, 0, tokens_at, name);
  const std::vector<uint8_t> bytes = LittleEndian(logits);
  Sha256 h0;
  const Sha256Digest start = h0.Update("detllm-demo-v1").Final();
  Sha256 link;
  link.Update(start);
  link.Update(bytes);
  steps[0].logits_chain = link.FinalHex();
  for (size_t i = 1; i < steps.size(); ++i) {
    steps[i].logits_chain = Sha256Hex(steps[i - 1].logits_chain + " " + name);
  }
  db::RunRecord run = MakeRun(MakeScenario("demo", 32), MakeMachine("Testbox A"), MakeArtifact(),
                              name, "float", "cpu", steps);
  run.step0_logits = bytes;
  return run;
}

class FloatColumn : public ::testing::Test {
 protected:
  // Records `runs`, reads them back as every consumer does.
  reports::FleetResults Load(const std::vector<db::RunRecord>& runs) {
    const std::string path = dir_.File("f" + std::to_string(n_++) + ".db");
    {
      db::RunStore store = db::RunStore::Open(path);
      for (const db::RunRecord& r : runs) store.RecordRun(r);
    }
    return reports::LoadFleetResults(db::RunStore::OpenReadOnly(path));
  }

  std::vector<db::RunRecord> Int8Rows() const {
    return {
        MakeRun(scenario_, machine_, artifact_, "int8-cpu-b1", "int8", "cpu", base_),
        MakeRun(scenario_, machine_, artifact_, "int8-cpu-b8", "int8", "cpu", base_, "ok", "", 8)};
  }

  // Three float rows. Step-0 logits (vocabulary of 3):
  //   b1    {4, 2, 1}       margin 4 - 2 = 2
  //   b8    {4.5, 2.25, 1}  margin 2.25
  //   split {3.75, 2, 0}    margin 1.75 (tokens 0 / 1): the smallest
  // |Δ|: b1-b8 max 0.5 (token 0), b1-split max 1 (token 2), b8-split max 1 (token 2, found
  // second): the largest is 1, b1 vs split, token 2. Ratio 1.75 / 1 = 1.75. Tokens: b1 and b8
  // agree throughout, split's part at step 5.
  std::vector<db::RunRecord> FloatRows() const {
    const std::vector<db::StepRecord> tokens = MakeSteps("float tokens", 32);
    return {FloatRun("fp32-cpu-b1", {4.0f, 2.0f, 1.0f}, tokens, std::nullopt),
            FloatRun("fp32-cpu-b8", {4.5f, 2.25f, 1.0f}, tokens, std::nullopt),
            FloatRun("fp32-cpu-split", {3.75f, 2.0f, 0.0f}, tokens, 5)};
  }

  ScratchDir dir_{"floatcol"};
  int n_ = 0;
  db::ScenarioRecord scenario_ = MakeScenario("demo", 32);
  db::MachineRecord machine_ = MakeMachine("Testbox A");
  db::ArtifactRecord artifact_ = MakeArtifact();
  std::vector<db::StepRecord> base_ = MakeSteps("int8", 32);
};

TEST_F(FloatColumn, StatisticsInTheTableAndBothReports) {
  std::vector<db::RunRecord> runs = Int8Rows();
  for (db::RunRecord& r : FloatRows()) runs.push_back(std::move(r));
  const reports::FleetResults fleet = Load(runs);
  const ScenarioVerdict& v = fleet.scenarios.at(0).table.verdict;
  EXPECT_TRUE(v.agree);
  EXPECT_EQ(v.float_with_hashes, 3);
  EXPECT_EQ(v.floats.rows, 3);
  EXPECT_EQ(v.floats.rows_with_logits, 3);
  EXPECT_FALSE(v.floats.tokens_agree);
  EXPECT_EQ(v.floats.first_token_divergence, 5);
  EXPECT_EQ(v.floats.first_logits_divergence, 0);
  ASSERT_TRUE(v.floats.cushion.has_value());
  EXPECT_EQ(v.floats.cushion->max_abs_delta, 1.0);
  EXPECT_EQ(v.floats.cushion->min_margin, 1.75);
  EXPECT_EQ(FloatVerdictText(v), "3 unique hashes \u274c");

  const std::vector<std::string> lines = FloatContrastLines(v);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "float rows: 3 rows with hashes; logits differ from step 0; tokens diverge at step 5 "
            "(2 unique token hashes)");
  EXPECT_EQ(lines[1],
            "step-0 cushion: max |\u0394logit| 1 (fp32-cpu-b1 vs fp32-cpu-split, token 2) vs "
            "top-1/top-2 margin 1.75 (fp32-cpu-split, tokens 0/1): margin = 1.75 x max |\u0394|");

  const std::string table = RenderRunTableText(fleet.scenarios.at(0).table);
  EXPECT_NE(table.find("1 unique hash \u2705"), std::string::npos) << table;
  EXPECT_NE(table.find("3 unique hashes \u274c"), std::string::npos) << table;
  for (const std::string& line : lines) EXPECT_NE(table.find("  " + line), std::string::npos);

  const nlohmann::json j = RunTableJson(fleet.scenarios.at(0).table);
  EXPECT_EQ(j["verdict"]["float"]["first_token_divergence"], 5);
  EXPECT_EQ(j["verdict"]["float"]["tokens_agree"], false);
  EXPECT_EQ(j["verdict"]["float"]["cushion"]["max_abs_delta"], 1.0);
  EXPECT_EQ(j["verdict"]["float"]["cushion"]["min_margin"], 1.75);
  EXPECT_EQ(j["verdict"]["float"]["cushion"]["delta_rows"],
            (nlohmann::json{"fp32-cpu-b1", "fp32-cpu-split"}));

  const std::string md = reports::RenderMarkdownReport(fleet);
  EXPECT_NE(md.find("| 3 unique hashes \u274c |"), std::string::npos) << md;
  for (const std::string& line : lines) {
    std::string cell;  // Markdown escapes the pipes of |Δlogit|
    for (char c : line) cell += c == '|' ? std::string("\\|") : std::string(1, c);
    EXPECT_NE(md.find("- " + cell), std::string::npos) << md;
  }
  const std::string html = reports::RenderHtmlReport(fleet);
  EXPECT_NE(html.find("3 unique hashes \u274c"), std::string::npos);
  for (const std::string& line : lines)
    EXPECT_NE(html.find("<li>" + line + "</li>"), std::string::npos);
}

TEST_F(FloatColumn, TokensThatAgreeAndIdenticalLogits) {
  const std::vector<db::StepRecord> tokens = MakeSteps("float tokens", 32);
  std::vector<db::RunRecord> runs = Int8Rows();
  runs.push_back(FloatRun("fp32-cpu-b1", {1.0f, 0.5f}, tokens, std::nullopt));
  db::RunRecord again = FloatRun("fp32-cpu-t1", {1.0f, 0.5f}, tokens, std::nullopt);
  again.steps = runs.back().steps;  // the very same chains
  again.final_logits_chain = again.steps.back().logits_chain;
  runs.push_back(again);
  const reports::FleetResults fleet = Load(runs);
  const ScenarioVerdict& v = fleet.scenarios.at(0).table.verdict;
  EXPECT_EQ(FloatVerdictText(v), "1 unique hash \u2705");
  const std::vector<std::string> lines = FloatContrastLines(v);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "float rows: 2 rows with hashes; logits identical over 32 steps; tokens agree over all "
            "32 steps");
  EXPECT_NE(lines[1].find("the rows' step-0 logits are identical"), std::string::npos) << lines[1];
}

TEST_F(FloatColumn, WithoutRecordedLogitsTheCushionSaysWhy) {
  std::vector<db::RunRecord> runs = Int8Rows();
  for (db::RunRecord& r : FloatRows()) {
    r.step0_logits.clear();  // as a float row recorded before schema 2
    runs.push_back(std::move(r));
  }
  const reports::FleetResults fleet = Load(runs);
  const std::vector<std::string> lines = FloatContrastLines(fleet.scenarios.at(0).table.verdict);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1],
            "step-0 cushion: not computed (0 of 3 float rows have step-0 logits recorded; it "
            "needs two)");
}

// Float rows never move the verdict: not when they disagree (the thesis), not when they agree,
// not when one crashes; and agreeing float rows do not rescue disagreeing int8 rows.
TEST_F(FloatColumn, GateAndAttestationIgnoreFloatRows) {
  auto judge = [&](const std::vector<db::RunRecord>& runs) {
    const reports::FleetResults fleet = Load(runs);
    const reports::GateResult gate = reports::EvaluateGate(fleet);
    EXPECT_EQ(gate.passed, fleet.scenarios.at(0).verdict.passed) << "gate and attestation agree";
    for (const reports::GateCase& c : gate.scenarios.at(0).cases) {
      if (c.name.rfind("fp32", 0) == 0) {
        EXPECT_EQ(c.outcome, reports::CaseOutcome::kSkipped) << c.name << " is never gated";
      }
    }
    return gate.passed;
  };
  std::vector<db::RunRecord> runs = Int8Rows();
  EXPECT_TRUE(judge(runs));
  for (db::RunRecord& r : FloatRows()) runs.push_back(std::move(r));
  EXPECT_TRUE(judge(runs)) << "three float hashes";
  runs.push_back(MakeRun(scenario_, machine_, artifact_, "fp32-cpu-t1", "float", "cpu", {},
                         "crashed", "signal 11 (Segmentation fault)"));
  EXPECT_TRUE(judge(runs)) << "a crashed float row";

  std::vector<db::RunRecord> bad = Int8Rows();
  bad[1].steps = DepartFrom(base_, 4, std::nullopt);
  bad[1].final_logits_chain = bad[1].steps.back().logits_chain;
  const std::vector<db::StepRecord> tokens = MakeSteps("float tokens", 32);
  bad.push_back(FloatRun("fp32-cpu-b1", {1.0f, 0.5f}, tokens, std::nullopt));
  EXPECT_FALSE(judge(bad)) << "int8 rows that disagree fail beside agreeing float rows";
}

}  // namespace
}  // namespace dv::verdict
