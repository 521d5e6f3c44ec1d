// The gate's verdicts on DBs built from records: agreement, disagreement named with its first
// divergent step, crashed and skipped rows, --expect files, JUnit XML and the size-capped job
// summary.
#include <gtest/gtest.h>

#include "reports/gate.h"
#include "reports/gate_output.h"
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

class GateTest : public ::testing::Test {
 protected:
  GateResult Gate(const std::string& path, const std::vector<ExpectEntry>* expect = nullptr) {
    const db::RunStore store = db::RunStore::OpenReadOnly(path);
    GateOptions options;
    options.expect = expect;
    return EvaluateGate(LoadFleetResults(store), options);
  }
  // A DB of scenario "demo" with the given runs recorded.
  std::string Db(const std::string& name, const std::vector<db::RunRecord>& runs) {
    const std::string path = dir_.File(name);
    db::RunStore store = db::RunStore::Open(path);
    for (const db::RunRecord& r : runs) store.RecordRun(r);
    return path;
  }
  const GateCase& Case(const GateResult& g, const std::string& name) {
    for (const GateCase& c : g.scenarios.at(0).cases) {
      if (c.name == name) return c;
    }
    throw std::runtime_error("no case " + name);
  }

  ScratchDir dir_{"gate"};
  db::ScenarioRecord scenario_ = MakeScenario("demo", 32);
  db::MachineRecord machine_ = MakeMachine("Testbox A");
  db::ArtifactRecord artifact_ = MakeArtifact();
  std::vector<db::StepRecord> base_ = MakeSteps("int8", 32);
};

TEST_F(GateTest, AgreeingRowsPassAndSkippedOrFloatRowsDoNotFail) {
  const GateResult g = Gate(fleet_testing::WriteDemoDb(dir_.File("demo.db")));
  EXPECT_TRUE(g.passed) << RenderGateText(g);
  const ScenarioGate& s = g.scenarios.at(0);
  EXPECT_EQ(s.int8_ok, 3);
  EXPECT_EQ(s.unique_logits, 1);
  EXPECT_EQ(s.logits_chain, base_.back().logits_chain);
  EXPECT_EQ(Case(g, "int8-cuda-b1").outcome, CaseOutcome::kSkipped);
  EXPECT_EQ(Case(g, "fp32-cpu-b1").outcome, CaseOutcome::kSkipped) << "float rows are never gated";
  EXPECT_EQ(Case(g, "int8-cpu-b8").outcome, CaseOutcome::kPass);
  const std::string text = RenderGateText(g);
  EXPECT_NE(text.find("PASS  demo: 3 int8 configurations agree after 32 steps"), std::string::npos)
      << text;
  EXPECT_NE(text.find("skipped, not failing: "), std::string::npos) << text;
  EXPECT_NE(text.find("int8-cuda-b1: no CUDA backend on this machine"), std::string::npos) << text;
}

TEST_F(GateTest, DisagreementNamesTheRowAndItsFirstDivergentStep) {
  const std::string path =
      Db("bad.db",
         {
             MakeRun(scenario_, machine_, artifact_, "int8-ref-b1", "int8", "reference", base_),
             MakeRun(scenario_, machine_, artifact_, "int8-ref-split", "int8", "reference", base_,
                     "ok", "", 1, 5),
             MakeRun(scenario_, machine_, artifact_, "int8-ref-b8", "int8", "reference",
                     DepartFrom(base_, 17, 20), "ok", "", 8),
         });
  const GateResult g = Gate(path);
  EXPECT_FALSE(g.passed);
  EXPECT_EQ(g.scenarios[0].unique_logits, 2);
  EXPECT_EQ(Case(g, "int8-ref-b1").outcome, CaseOutcome::kPass) << "the baseline's group passes";
  EXPECT_EQ(Case(g, "int8-ref-split").outcome, CaseOutcome::kPass);
  const GateCase& bad = Case(g, "int8-ref-b8");
  EXPECT_EQ(bad.outcome, CaseOutcome::kFail);
  EXPECT_EQ(bad.message, "logits chain leaves int8-ref-b1's at step 17; tokens leave at step 20");
  const std::string text = RenderGateText(g);
  EXPECT_NE(text.find("FAIL  demo: int8 configurations disagree: 2 unique logits hashes, 2 unique "
                      "token hashes"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("int8-ref-b8: logits chain leaves int8-ref-b1's at step 17"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gate: FAIL"), std::string::npos);
}

TEST_F(GateTest, CrashedOrTimedOutInt8RowFails) {
  for (const char* status : {"crashed", "timeout", "killed", "error"}) {
    const std::string path =
        Db(std::string(status) + ".db",
           {
               MakeRun(scenario_, machine_, artifact_, "int8-ref-b1", "int8", "reference", base_),
               MakeRun(scenario_, machine_, artifact_, "int8-ref-b8", "int8", "reference", {},
                       status, "signal 11", 8),
           });
    const GateResult g = Gate(path);
    EXPECT_FALSE(g.passed) << status;
    EXPECT_EQ(Case(g, "int8-ref-b8").message,
              std::string("produced no hash: ") + status + ": signal 11");
  }
}

TEST_F(GateTest, EmptyDbAndScenarioWithoutInt8HashesFail) {
  { db::RunStore store = db::RunStore::Open(dir_.File("empty.db")); }
  const GateResult empty = Gate(dir_.File("empty.db"));
  EXPECT_FALSE(empty.passed);
  ASSERT_EQ(empty.problems.size(), 1u);
  EXPECT_NE(empty.problems[0].find("holds no scenarios"), std::string::npos);

  const std::string path =
      Db("skipped.db", {
                           MakeRun(scenario_, machine_, artifact_, "int8-cuda-b1", "int8", "cuda",
                                   {}, "skipped", "no GPU"),
                       });
  const GateResult g = Gate(path);
  EXPECT_FALSE(g.passed) << "nothing shows agreement";
  EXPECT_EQ(g.scenarios[0].problems.at(0), "no int8 configuration produced a hash");
}

TEST_F(GateTest, RowsOfDifferentArtifactsAreNotComparable) {
  const std::string path =
      Db("mixed.db",
         {
             MakeRun(scenario_, machine_, artifact_, "int8-ref-b1", "int8", "reference", base_),
             MakeRun(scenario_, MakeMachine("Testbox B"), MakeArtifact("artifact:other"),
                     "int8-ref-b1", "int8", "reference", base_),
         });
  const GateResult g = Gate(path);
  EXPECT_FALSE(g.passed);
  EXPECT_NE(g.scenarios[0].problems.at(0).find("different artifacts"), std::string::npos);
}

TEST_F(GateTest, ExpectFileChecksEveryInt8RowAtItsStep) {
  const std::string path = fleet_testing::WriteDemoDb(dir_.File("demo.db"));
  const std::string artifact = MakeArtifact().id.substr(0, 16);
  const std::string logits32 = base_.back().logits_chain.substr(0, 16),
                    tokens32 = base_.back().token_chain.substr(0, 16);
  const std::string logits10 = base_[9].logits_chain.substr(0, 12),
                    tokens10 = base_[9].token_chain.substr(0, 12);

  auto expect = ParseExpect(R"({"scenario": "demo", "artifact": ")" + artifact +
                                R"(", "steps": 32, "logits": ")" + logits32 + R"(", "tokens": ")" +
                                tokens32 + "\"}",
                            "e.json");
  EXPECT_TRUE(Gate(path, &expect).passed);

  // An earlier step of the chain, as a list without a scenario name.
  expect = ParseExpect(R"([{"artifact": ")" + artifact + R"(", "steps": 10, "logits": ")" +
                           logits10 + R"(", "tokens": ")" + tokens10 + "\"}]",
                       "e.json");
  EXPECT_TRUE(Gate(path, &expect).passed);

  // The wrong logits prefix fails every int8 row that ran.
  expect =
      ParseExpect(R"({"artifact": ")" + artifact +
                      R"(", "steps": 32, "logits": "0123456789ab", "tokens": ")" + tokens32 + "\"}",
                  "e.json");
  const GateResult wrong = Gate(path, &expect);
  EXPECT_FALSE(wrong.passed);
  EXPECT_EQ(Case(wrong, "int8-cpu-b1").outcome, CaseOutcome::kFail);
  EXPECT_NE(Case(wrong, "int8-cpu-b1").message.find("--expect says logits 0123456789ab"),
            std::string::npos);
  EXPECT_EQ(Case(wrong, "int8-cuda-b1").outcome, CaseOutcome::kSkipped);

  // More steps than the runs have.
  expect = ParseExpect(R"({"artifact": ")" + artifact + R"(", "steps": 512, "logits": ")" +
                           logits32 + R"(", "tokens": ")" + tokens32 + "\"}",
                       "e.json");
  EXPECT_NE(Case(Gate(path, &expect), "int8-cpu-b1")
                .message.find("has 32 steps; --expect names step 512"),
            std::string::npos);

  // No entry for this artifact, or an entry for a scenario the DB does not hold.
  expect = ParseExpect(R"({"artifact": "6658cea4dd89c613", "steps": 32, "logits": ")" + logits32 +
                           R"(", "tokens": ")" + tokens32 + "\"}",
                       "e.json");
  const GateResult other = Gate(path, &expect);
  EXPECT_FALSE(other.passed);
  EXPECT_NE(other.scenarios[0].problems.at(0).find("--expect has no entry for this scenario"),
            std::string::npos);
  expect = ParseExpect(R"({"scenario": "sonnet18", "artifact": ")" + artifact +
                           R"(", "steps": 32, "logits": ")" + logits32 + R"(", "tokens": ")" +
                           tokens32 + "\"}",
                       "e.json");
  const GateResult absent = Gate(path, &expect);
  EXPECT_FALSE(absent.passed);
  EXPECT_NE(absent.problems.at(0).find("--expect names scenario 'sonnet18'"), std::string::npos);
}

TEST(ParseExpect, RejectsMalformedDocumentsWithTheSource) {
  const std::string good =
      R"("artifact": "b0b408ef28584", "steps": 32, "logits": "f2439c4b88fb", "tokens": "364da471d565")";
  EXPECT_EQ(ParseExpect("{" + good + "}", "e.json").size(), 1u);
  EXPECT_EQ(ParseExpect("[{" + good + "}, {" + good + "}]", "e.json").size(), 2u);
  EXPECT_EQ(
      ParseExpect(
          R"({"artifact": "B0B408EF28584", "steps": 1, "logits": "F2439C4B", "tokens": "364da471"})",
          "e.json")[0]
          .hashes.artifact,
      "b0b408ef28584")
      << "hex case is ignored";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"not json", "e.json:1: not JSON"},
      // Two "logits" would mean the first to one reader and the last to another.
      {"{" + good + ",\n\"logits\": \"000000000000\"}",
       "e.json:2: duplicate key \"logits\" (first at line 1)"},
      {"[]", "e.json: an empty list expects nothing"},
      {"42", "e.json: an expectation must be a JSON object"},
      {"{" + good + R"(, "logits_at_512": "x"})", "e.json: unknown key \"logits_at_512\""},
      {R"({"artifact": "b0b4", "steps": 32, "logits": "f2439c4b88fb", "tokens": "364da471d565"})",
       "e.json: \"artifact\" must be 8 to 64 hex digits"},
      {R"({"artifact": "b0b408ef28584", "steps": 0, "logits": "f2439c4b88fb", "tokens": "364da471d565"})",
       "e.json: \"steps\" must be an integer >= 1"},
      {R"({"artifact": "b0b408ef28584", "steps": 32, "logits": "f2439c4b88fz", "tokens": "364da471d565"})",
       "e.json: \"logits\" must be 8 to 64 hex digits"},
      {R"({"artifact": "b0b408ef28584", "steps": 32, "logits": "f2439c4b88fb"})",
       "e.json: missing \"tokens\""},
      {"[{" + good + "}, 7]", "e.json: entry 1: an expectation must be a JSON object"},
  };
  for (const auto& [text, message] : bad) {
    try {
      ParseExpect(text, "e.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ReportError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(message, 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
  EXPECT_THROW(LoadExpectFile("/nonexistent/expect.json"), ReportError);
}

TEST_F(GateTest, JunitHasOneTestcasePerRun) {
  const std::string path =
      Db("bad.db",
         {
             MakeRun(scenario_, machine_, artifact_, "int8-ref-b1", "int8", "reference", base_),
             MakeRun(scenario_, machine_, artifact_, "int8-ref-b8", "int8", "reference",
                     DepartFrom(base_, 5, std::nullopt), "ok", "", 8),
             MakeRun(scenario_, machine_, artifact_, "int8-cuda-b1", "int8", "cuda", {}, "skipped",
                     "no GPU <here>"),
         });
  const std::string xml = RenderJunitXml(Gate(path));
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"detverify "
                      "gate\" tests=\"3\" "
                      "failures=\"1\" errors=\"0\" skipped=\"1\">",
                      0),
            0u)
      << xml;
  EXPECT_NE(
      xml.find("<testsuite name=\"demo\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\">"),
      std::string::npos);
  EXPECT_NE(xml.find("<testcase classname=\"detverify.demo\" name=\"int8-ref-b8\">"),
            std::string::npos);
  EXPECT_NE(
      xml.find(
          "<failure message=\"logits chain leaves int8-ref-b1&#39;s at step 5; tokens agree\""),
      std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"skipped: no GPU &lt;here&gt;\"/>"), std::string::npos)
      << xml;
  size_t testcases = 0;
  for (size_t at = xml.find("<testcase "); at != std::string::npos;
       at = xml.find("<testcase ", at + 1))
    ++testcases;
  EXPECT_EQ(testcases, 3u);
}

TEST_F(GateTest, SummaryStaysUnderItsLimit) {
  std::vector<db::RunRecord> runs;
  const auto steps = MakeSteps("x", 2);
  for (int i = 0; i < 400; ++i) {
    runs.push_back(MakeRun(scenario_, machine_, artifact_, "int8-ref-b1-" + std::to_string(i),
                           "int8", "reference", steps));
  }
  runs.push_back(MakeRun(scenario_, machine_, artifact_, "int8-ref-odd", "int8", "reference",
                         MakeSteps("y", 2)));
  const GateResult g = Gate(Db("many.db", runs));
  const std::string full = RenderGateSummary(g);
  EXPECT_NE(full.find("## \u274c detverify gate: FAIL"), std::string::npos);
  EXPECT_NE(full.find("| int8-ref-b1-399 |"), std::string::npos) << "fits: every row";
  EXPECT_LT(full.size(), kMaxSummaryBytes);

  const std::string small = RenderGateSummary(g, 16000);
  EXPECT_LE(small.size(), 16000u);
  EXPECT_NE(small.find("| int8-ref-odd |"), std::string::npos) << "failing rows are kept";
  EXPECT_EQ(small.find("| int8-ref-b1-399 |"), std::string::npos) << "passing rows go first";
  EXPECT_NE(small.find("passing rows are left out"), std::string::npos);

  const std::string tiny = RenderGateSummary(g, 9000);
  EXPECT_LE(tiny.size(), 9000u);
}

}  // namespace
}  // namespace dv::reports
