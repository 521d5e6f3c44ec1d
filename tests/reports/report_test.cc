// The report's analysis and Markdown/HTML structure, on DBs built from records: where float rows
// leave the int8 batch-1 row, the run table across machines, the header and fingerprints.
#include <gtest/gtest.h>

#include <algorithm>

#include "reports/divergence_rows.h"
#include "reports/fleet_results.h"
#include "reports/html_report.h"
#include "reports/markdown_report.h"
#include "reports/report_error.h"
#include "tests/reports/fleet_fixtures.h"

namespace dv::reports {
namespace {

using fleet_testing::DepartFrom;
using fleet_testing::MakeArtifact;
using fleet_testing::MakeMachine;
using fleet_testing::MakeRun;
using fleet_testing::MakeScenario;
using fleet_testing::MakeSteps;
using fleet_testing::ScratchDir;

// The lines of `text` that start with `prefix`.
std::vector<std::string> LinesStartingWith(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

std::string LineWith(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

class ReportTest : public ::testing::Test {
 protected:
  ScratchDir dir_{"report"};
};

TEST_F(ReportTest, FloatRowsLeaveTheBatchOneRowWhereTheirChainsDo) {
  const std::string path = fleet_testing::WriteDemoDb(dir_.File("demo.db"));
  const db::RunStore store = db::RunStore::OpenReadOnly(path);
  const FleetResults fleet = LoadFleetResults(store);
  ASSERT_EQ(fleet.scenarios.size(), 1u);
  const ScenarioResults& s = fleet.scenarios[0];
  ASSERT_TRUE(s.baseline.has_value());
  EXPECT_EQ(s.row_names[*s.baseline], "int8-cpu-b1");
  const std::vector<DivergenceRow> rows = DivergenceRows(s);
  ASSERT_EQ(rows.size(), 3u) << "the three float rows; the int8 rows follow the baseline";
  std::map<std::string, DivergenceRow> by_name;
  for (const DivergenceRow& r : rows) by_name[r.name] = r;
  EXPECT_EQ(by_name["fp32-cpu-b1"].divergence.logits_step, 17);
  EXPECT_FALSE(by_name["fp32-cpu-b1"].divergence.token_step.has_value());
  EXPECT_EQ(by_name["fp32-cpu-b1"].tokens_text, "agree");
  EXPECT_EQ(by_name["bf16-cpu-b8"].divergence.logits_step, 3);
  EXPECT_EQ(by_name["bf16-cpu-b8"].divergence.token_step, 9);
  EXPECT_FALSE(by_name["fp16-cuda-b1"].compared);
}

TEST_F(ReportTest, MarkdownHasHeaderRunTableDivergenceAndFingerprints) {
  const std::string path = fleet_testing::WriteDemoDb(dir_.File("demo.db"));
  const db::RunStore store = db::RunStore::OpenReadOnly(path);
  const FleetResults fleet = LoadFleetResults(store);
  const std::string md = RenderMarkdownReport(fleet);

  // Header: artifact SHA-256 in full, tool and spec versions, the results digest.
  EXPECT_NE(md.find("# detverify report"), std::string::npos);
  EXPECT_NE(LineWith(md, "| artifact sha256 |").find(MakeArtifact().id), std::string::npos);
  EXPECT_NE(LineWith(md, "| runs recorded by |").find("detllm-v1"), std::string::npos);
  EXPECT_NE(LineWith(md, "| results digest |").find(fleet.results_digest), std::string::npos);

  // The run table: one row per run, device from the fingerprint, hashes at the last step.
  EXPECT_NE(md.find("## Scenario `demo`"), std::string::npos);
  const std::string b1 = LineWith(md, "| int8-cpu-b1 |");
  EXPECT_NE(b1.find("Testbox A (cpu)"), std::string::npos) << b1;
  EXPECT_NE(b1.find(MakeSteps("int8", 32).back().logits_chain.substr(0, 12)), std::string::npos)
      << b1;
  EXPECT_NE(md.find("int8 hash @32"), std::string::npos);
  EXPECT_NE(md.find("**1 unique hash \u2705**"), std::string::npos);
  EXPECT_NE(md.find("**gate: \u2705 pass**"), std::string::npos);
  EXPECT_NE(LineWith(md, "`int8-cuda-b1`").find("skipped"), std::string::npos);

  // Divergence of each float row from the int8 batch-1 row.
  EXPECT_NE(md.find("Baseline: int8-cpu-b1 on Testbox A (cpu), 32 steps."), std::string::npos);
  const std::string fp32 = LineWith(md, "| fp32-cpu-b1 | Testbox A (cpu) |");
  EXPECT_NE(fp32.find("| float | ok | step 17 | agree |"), std::string::npos) << fp32;
  const std::string bf16 = LineWith(md, "| bf16-cpu-b8 | Testbox A (cpu) |");
  EXPECT_NE(bf16.find("| float | ok | step 3 | leave at step 9 |"), std::string::npos) << bf16;

  // Each machine's fingerprint.
  EXPECT_NE(md.find("## Machines"), std::string::npos);
  EXPECT_EQ(LinesStartingWith(md, "### Testbox A").size(), 1u);
  EXPECT_NE(md.find("\"cpu_model\": \"Testbox A\""), std::string::npos);
}

TEST_F(ReportTest, RunTableSpansEveryMachineAndNamesRowsApart) {
  const std::string a = fleet_testing::WriteDemoDb(dir_.File("a.db"), 32, "Box A");
  const std::string b = fleet_testing::WriteDemoDb(dir_.File("b.db"), 32, "Box B");
  db::MergeDatabases({a, b}, dir_.File("fleet.db"));
  const db::RunStore store = db::RunStore::OpenReadOnly(dir_.File("fleet.db"));
  const FleetResults fleet = LoadFleetResults(store);
  ASSERT_EQ(fleet.machines.size(), 2u);
  const std::string md = RenderMarkdownReport(fleet);
  EXPECT_EQ(LinesStartingWith(md, "| Box A (cpu) |").size(), 7u);
  EXPECT_EQ(LinesStartingWith(md, "| Box B (cpu) |").size(), 7u);
  EXPECT_NE(md.find("- `int8-cuda-b1 @ Box A "), std::string::npos)
      << "rows named outside the table carry their machine";
  EXPECT_EQ(LinesStartingWith(md, "### Box ").size(), 2u);
  EXPECT_NE(md.find("**1 unique hash \u2705**"), std::string::npos) << "both machines agree";
}

TEST_F(ReportTest, DisagreeingInt8RowIsChartedAndNamed) {
  const std::string path = dir_.File("bad.db");
  {
    db::RunStore store = db::RunStore::Open(path);
    const auto s = MakeScenario("demo", 32);
    const auto m = MakeMachine("Testbox A");
    const auto a = MakeArtifact();
    const auto base = MakeSteps("int8", 32);
    store.RecordRun(MakeRun(s, m, a, "int8-ref-b1", "int8", "reference", base));
    store.RecordRun(MakeRun(s, m, a, "int8-ref-b8", "int8", "reference",
                            DepartFrom(base, 12, std::nullopt), "ok", "", 8));
  }
  const db::RunStore store = db::RunStore::OpenReadOnly(path);
  const FleetResults fleet = LoadFleetResults(store);
  const std::string md = RenderMarkdownReport(fleet);
  EXPECT_NE(md.find("**gate: \u274c fail**"), std::string::npos);
  EXPECT_NE(md.find("**2 unique hashes \u274c**"), std::string::npos);
  EXPECT_NE(
      LineWith(md, "| int8-ref-b8 | Testbox A (cpu) |").find("| int8 | ok | step 12 | agree |"),
      std::string::npos);
  const std::string html = RenderHtmlReport(fleet);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("logits: step 12"), std::string::npos);
}

TEST_F(ReportTest, TextFromTheDbIsEscaped) {
  const std::string path = dir_.File("odd.db");
  {
    db::RunStore store = db::RunStore::Open(path);
    const auto s = MakeScenario("<b>demo</b>", 4);
    const auto m = MakeMachine("CPU <script>alert(1)</script> | x");
    store.RecordRun(
        MakeRun(s, m, MakeArtifact(), "int8-ref-b1", "int8", "reference", MakeSteps("x", 4)));
  }
  const db::RunStore store = db::RunStore::OpenReadOnly(path);
  const FleetResults fleet = LoadFleetResults(store);
  const std::string html = RenderHtmlReport(fleet);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>demo"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  const std::string md = RenderMarkdownReport(fleet);
  EXPECT_NE(md.find("CPU \\<script\\>alert(1)\\</script\\> \\| x"), std::string::npos);
}

TEST_F(ReportTest, HtmlIsSelfContained) {
  const std::string path = fleet_testing::WriteDemoDb(dir_.File("demo.db"));
  const db::RunStore store = db::RunStore::OpenReadOnly(path);
  const std::string html = RenderHtmlReport(LoadFleetResults(store));
  for (const char* fetch :
       {"src=", "href=", "url(", "@import", "<script", "<link", "http://", "https://"}) {
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  }
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_NE(html.find("<svg class=\"chart\""), std::string::npos);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
}

TEST_F(ReportTest, UnknownScenarioIsAOneLineError) {
  const std::string path = fleet_testing::WriteDemoDb(dir_.File("demo.db"));
  const db::RunStore store = db::RunStore::OpenReadOnly(path);
  try {
    LoadFleetResults(store, "nope");
    FAIL() << "no error";
  } catch (const ReportError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": no scenario 'nope' (known: demo)");
  }
  EXPECT_EQ(LoadFleetResults(store, "demo").scenarios.size(), 1u);
  EXPECT_EQ(LoadFleetResults(store, store.Scenarios()[0].id.substr(0, 8)).scenarios.size(), 1u);
}

TEST_F(ReportTest, SameDbGivesTheSameBytes) {
  const std::string path = fleet_testing::WriteDemoDb(dir_.File("demo.db"));
  const db::RunStore store = db::RunStore::OpenReadOnly(path);
  EXPECT_EQ(RenderHtmlReport(LoadFleetResults(store)), RenderHtmlReport(LoadFleetResults(store)));
  EXPECT_EQ(RenderMarkdownReport(LoadFleetResults(store)),
            RenderMarkdownReport(LoadFleetResults(store)));
}

}  // namespace
}  // namespace dv::reports
