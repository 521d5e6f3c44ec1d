// `detverify gate` through the binary: exit 0 on a DB that `detverify run` produced, 1 on
// disagreeing, crashed or empty DBs (with the rows and steps named), 2 on unreadable DBs and bad
// --expect files; the JUnit and summary files it writes.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::DepartFrom;
using fleet_testing::Detverify;
using fleet_testing::LineCount;
using fleet_testing::ReadFile;
using fleet_testing::ScratchDir;
using fleet_testing::WriteFile;

class GateCli : public ::testing::Test {
 protected:
  // A real run of quick.yaml's reference configurations (fast: the tiny synthetic model).
  std::string RunQuick(const std::string& name) {
    const std::string db = dir_.File(name);
    const auto r =
        Detverify({"run", fleet_testing::SourceDir() + "/scenarios/quick.yaml", "--db", db,
                   "--config", "int8-ref-b1", "--config", "int8-ref-b4", "--config",
                   "int8-ref-split", "--config", "int8-cuda-b1", "--config", "fp32-cpu-b1"});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return db;
  }
  ScratchDir dir_{"gate-cli"};
};

TEST_F(GateCli, AgreeingRunPassesWithJunitAndSummary) {
  const std::string db = RunQuick("quick.db");
  const auto r = Detverify(
      {"gate", db, "--junit", dir_.File("junit.xml"), "--summary", dir_.File("summary.md")});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS  quick: 3 int8 configurations agree after 32 steps"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("skipped, not failing: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gate: PASS"), std::string::npos);
  const std::string junit = ReadFile(dir_.File("junit.xml"));
  EXPECT_NE(junit.find("tests=\"5\" failures=\"0\" errors=\"0\" skipped=\"2\""), std::string::npos)
      << junit;
  const std::string summary = ReadFile(dir_.File("summary.md"));
  EXPECT_EQ(summary.rfind("## \u2705 detverify gate: PASS", 0), 0u) << summary;
  EXPECT_NE(summary.find("do not fail the gate"), std::string::npos)
      << "the summary says skipped rows do not fail";
}

TEST_F(GateCli, ExpectFileFromTheRunPassesAndAWrongOneFails) {
  const std::string db = RunQuick("quick.db");
  db::RunStore store = db::RunStore::OpenReadOnly(db);
  const auto runs = store.Runs(store.Scenarios().at(0).id);
  std::string artifact, logits, tokens;
  for (const auto& run : runs) {
    if (run.configuration == "int8-ref-b1") {
      artifact = run.artifact.id.substr(0, 16);
      logits = run.final_logits_chain->substr(0, 16);
      tokens = run.final_token_chain->substr(0, 16);
    }
  }
  const nlohmann::json good = {{"scenario", "quick"},
                               {"artifact", artifact},
                               {"steps", 32},
                               {"logits", logits},
                               {"tokens", tokens}};
  WriteFile(dir_.File("good.json"), good.dump(2));
  const auto pass = Detverify({"gate", db, "--expect", dir_.File("good.json")});
  EXPECT_EQ(pass.code, 0) << pass.out << pass.err;

  nlohmann::json wrong = good;
  wrong["tokens"] = "0000000000000000";
  WriteFile(dir_.File("wrong.json"), nlohmann::json::array({wrong}).dump());
  const auto fail = Detverify({"gate", db, "--expect", dir_.File("wrong.json")});
  EXPECT_EQ(fail.code, 1) << fail.out << fail.err;
  EXPECT_NE(fail.out.find("int8-ref-b1: after 32 steps: logits"), std::string::npos) << fail.out;
}

TEST_F(GateCli, DisagreeingRowIsNamedWithItsStep) {
  const std::string db = dir_.File("bad.db");
  {
    db::RunStore store = db::RunStore::Open(db);
    const auto s = fleet_testing::MakeScenario("demo", 32);
    const auto m = fleet_testing::MakeMachine("Testbox A");
    const auto a = fleet_testing::MakeArtifact();
    const auto base = fleet_testing::MakeSteps("int8", 32);
    store.RecordRun(fleet_testing::MakeRun(s, m, a, "int8-cpu-b1", "int8", "cpu", base));
    store.RecordRun(fleet_testing::MakeRun(s, m, a, "int8-cpu-b8", "int8", "cpu",
                                           DepartFrom(base, 21, std::nullopt), "ok", "", 8));
  }
  const auto r = Detverify(
      {"gate", db, "--junit", dir_.File("junit.xml"), "--summary", dir_.File("summary.md")});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("int8-cpu-b8: logits chain leaves int8-cpu-b1's at step 21; tokens agree"),
            std::string::npos)
      << r.out;
  EXPECT_NE(ReadFile(dir_.File("junit.xml")).find("failures=\"1\""), std::string::npos);
  EXPECT_NE(ReadFile(dir_.File("summary.md")).find("at step 21"), std::string::npos);
}

TEST_F(GateCli, CrashedConfigurationFailsTheGate) {
  // The runner's fault injection crashes int8-ref-b4's child at its second step.
  const std::string db = dir_.File("crash.db");
  ::setenv("DETVERIFY_FAULT", "crash:int8-ref-b4", 1);
  const auto run = Detverify({"run", fleet_testing::SourceDir() + "/scenarios/quick.yaml", "--db",
                              db, "--config", "int8-ref-b1", "--config", "int8-ref-b4"});
  ::unsetenv("DETVERIFY_FAULT");
  EXPECT_EQ(run.code, 1) << run.out << run.err;
  const auto r = Detverify({"gate", db});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("int8-ref-b4: produced no hash: crashed"), std::string::npos) << r.out;
}

TEST_F(GateCli, EmptyDbFails) {
  { db::RunStore store = db::RunStore::Open(dir_.File("empty.db")); }
  const auto r = Detverify({"gate", dir_.File("empty.db"), "--junit", dir_.File("junit.xml")});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("holds no scenarios"), std::string::npos) << r.out;
  EXPECT_NE(ReadFile(dir_.File("junit.xml")).find("failures=\"1\""), std::string::npos);
}

TEST_F(GateCli, UnreadableInputsExitTwoWithOneLine) {
  const std::string db = fleet_testing::WriteDemoDb(dir_.File("demo.db"));
  WriteFile(dir_.File("garbage.db"), std::string(8192, '\x5a'));
  WriteFile(dir_.File("bad.json"), "{\"artifact\": 1}");
  const std::vector<std::vector<std::string>> cases = {
      {"gate", dir_.File("missing.db"), "--junit", dir_.File("junit.xml")},
      {"gate", dir_.File("garbage.db"), "--junit", dir_.File("junit.xml")},
      {"gate", db, "--expect", dir_.File("missing.json"), "--junit", dir_.File("junit.xml")},
      {"gate", db, "--expect", dir_.File("bad.json"), "--junit", dir_.File("junit.xml")},
      {"gate", db, "--scenario", "nope", "--junit", dir_.File("junit.xml")},
      {"gate", db, "--junit", dir_.File("no/such/dir/junit.xml")},
      {"gate"},
  };
  for (const auto& args : cases) {
    const auto r = Detverify(args);
    EXPECT_EQ(r.code, 2) << args[1] << ": " << r.out << r.err;
    if (args.size() > 1) {
      EXPECT_EQ(LineCount(r.err), 1u) << r.err;
      EXPECT_EQ(r.err.rfind("detverify: ", 0), 0u) << r.err;
    }
    EXPECT_FALSE(std::filesystem::exists(dir_.File("junit.xml"))) << "nothing written on an error";
  }
}

TEST_F(GateCli, ScenarioOptionGatesOneScenario) {
  const std::string a = fleet_testing::WriteDemoDb(dir_.File("a.db"));
  const std::string b = dir_.File("b.db");
  {
    db::RunStore store = db::RunStore::Open(b);
    const auto s = fleet_testing::MakeScenario("broken", 8);
    const auto m = fleet_testing::MakeMachine("Testbox A");
    const auto base = fleet_testing::MakeSteps("b", 8);
    store.RecordRun(fleet_testing::MakeRun(s, m, fleet_testing::MakeArtifact(), "int8-cpu-b1",
                                           "int8", "cpu", base));
    store.RecordRun(fleet_testing::MakeRun(s, m, fleet_testing::MakeArtifact(), "int8-cpu-b8",
                                           "int8", "cpu", DepartFrom(base, 0, 0), "ok", "", 8));
  }
  const auto merged = Detverify({"merge", a, b, "-o", dir_.File("fleet.db")});
  ASSERT_EQ(merged.code, 0) << merged.err;
  EXPECT_EQ(Detverify({"gate", dir_.File("fleet.db")}).code, 1);
  EXPECT_EQ(Detverify({"gate", dir_.File("fleet.db"), "--scenario", "demo"}).code, 0);
  const auto broken = Detverify({"gate", dir_.File("fleet.db"), "--scenario", "broken"});
  EXPECT_EQ(broken.code, 1);
  EXPECT_NE(broken.out.find("leaves int8-cpu-b1's at step 0; tokens leave at step 0"),
            std::string::npos)
      << broken.out;
}

}  // namespace
}  // namespace dv
