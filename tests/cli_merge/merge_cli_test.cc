// `detverify merge` through the binary: the union of the inputs, idempotent and commutative
// (checked with the content digest), inputs never modified, and refusals (conflicting duplicate,
// unknown schema version, missing input) that print one line, exit 2 and leave OUT untouched.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::Detverify;
using fleet_testing::LineCount;
using fleet_testing::ReadFile;
using fleet_testing::ScratchDir;

void Sql(const std::string& path, const std::string& sql) { fleet_testing::RunSql(path, sql); }

std::string Digest(const std::string& path) { return db::ContentDigest(path); }

class MergeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = fleet_testing::WriteDemoDb(dir_.File("a.db"), 16, "Box A");
    b_ = fleet_testing::WriteDemoDb(dir_.File("b.db"), 16, "Box B");
    // A third machine's DB with one attestation, so merge carries those too.
    c_ = fleet_testing::WriteDemoDb(dir_.File("c.db"), 16, "Box C");
    db::RunStore store = db::RunStore::Open(c_);
    store.AddAttestation(
        {"", R"({"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[]})",
         "box-c", "2026-01-31T13:00:00Z"});
  }
  // The merge, expected to succeed.
  std::string Merge(const std::vector<std::string>& inputs, const std::string& out) {
    std::vector<std::string> args = {"merge"};
    args.insert(args.end(), inputs.begin(), inputs.end());
    args.insert(args.end(), {"-o", out});
    const auto r = Detverify(args);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return out;
  }

  ScratchDir dir_{"merge-cli"};
  std::string a_, b_, c_;
};

TEST_F(MergeCli, ResultIsTheUnionAndSaysSo) {
  const auto r = Detverify({"merge", a_, b_, c_, "-o", dir_.File("fleet.db")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("merged 3 inputs into " + dir_.File("fleet.db")), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("3 machines, 1 artifacts, 1 scenarios, 21 runs, 240 steps, 1 attestations"),
            std::string::npos)
      << r.out;
  const db::RunStore store = db::RunStore::OpenReadOnly(dir_.File("fleet.db"));
  EXPECT_EQ(store.Machines().size(), 3u);
  EXPECT_EQ(store.Runs(store.Scenarios().at(0).id).size(), 21u);
  EXPECT_EQ(store.Attestations().size(), 1u);
}

TEST_F(MergeCli, IdempotentCommutativeAndInputsUntouched) {
  const std::string bytes_a = ReadFile(a_), bytes_b = ReadFile(b_), bytes_c = ReadFile(c_);
  const std::string abc = Digest(Merge({a_, b_, c_}, dir_.File("abc.db")));
  EXPECT_EQ(Digest(Merge({c_, a_, b_}, dir_.File("cab.db"))), abc) << "order does not matter";
  EXPECT_EQ(Digest(Merge({b_, c_, a_, b_}, dir_.File("bcab.db"))), abc)
      << "repetition does not matter";
  EXPECT_EQ(Digest(Merge({a_, b_, c_}, dir_.File("abc.db"))), abc)
      << "merging again into OUT changes nothing";
  EXPECT_EQ(Digest(Merge({dir_.File("abc.db"), dir_.File("abc.db")}, dir_.File("twice.db"))), abc);
  // Growing a fleet DB one machine at a time gives the same content as one merge.
  Merge({a_}, dir_.File("grown.db"));
  Merge({c_}, dir_.File("grown.db"));
  EXPECT_EQ(Digest(Merge({b_}, dir_.File("grown.db"))), abc);
  EXPECT_EQ(ReadFile(a_), bytes_a);
  EXPECT_EQ(ReadFile(b_), bytes_b);
  EXPECT_EQ(ReadFile(c_), bytes_c);
}

TEST_F(MergeCli, ConflictingDuplicateIsRefusedAndOutUntouched) {
  // Box D's DB describes the same artifact (same id) with another source: a conflicting duplicate.
  const std::string d = dir_.File("d.db");
  {
    db::RunStore store = db::RunStore::Open(d);
    db::ArtifactRecord artifact = fleet_testing::MakeArtifact();
    artifact.source = "artifact:renamed";
    store.RecordRun(fleet_testing::MakeRun(
        fleet_testing::MakeScenario("demo", 16), fleet_testing::MakeMachine("Box D"), artifact,
        "int8-cpu-b1", "int8", "cpu", fleet_testing::MakeSteps("d", 16)));
  }
  const std::string bytes_d = ReadFile(d);
  const auto fresh = Detverify({"merge", a_, d, "-o", dir_.File("new.db")});
  EXPECT_EQ(fresh.code, 2);
  EXPECT_EQ(LineCount(fresh.err), 1u) << fresh.err;
  EXPECT_EQ(fresh.err.rfind("detverify: ", 0), 0u) << fresh.err;
  EXPECT_NE(fresh.err.find("conflict"), std::string::npos) << fresh.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.File("new.db")));

  const std::string fleet = Merge({a_, b_}, dir_.File("fleet.db"));
  // OUT is written in place (one transaction, rolled back): its content, not its header bytes,
  // is what must be left as it was.
  const std::string before = Digest(fleet);
  const auto grow = Detverify({"merge", d, "-o", fleet});
  EXPECT_EQ(grow.code, 2);
  EXPECT_EQ(Digest(fleet), before) << "OUT is left as it was";
  EXPECT_EQ(ReadFile(d), bytes_d);
}

TEST_F(MergeCli, UnknownSchemaVersionIsRefused) {
  const std::string future = dir_.File("future.db");
  std::filesystem::copy_file(b_, future);
  Sql(future, "PRAGMA user_version = 99");
  const std::string fleet = Merge({a_}, dir_.File("fleet.db"));
  const std::string before = ReadFile(fleet);
  const auto r = Detverify({"merge", future, "-o", fleet});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(future), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("99"), std::string::npos) << "names the version: " << r.err;
  EXPECT_EQ(ReadFile(fleet), before);
}

TEST_F(MergeCli, MissingOrForeignInputIsRefused) {
  fleet_testing::WriteFile(dir_.File("notes.txt"), "not a database\n");
  for (const std::string& bad : {dir_.File("missing.db"), dir_.File("notes.txt")}) {
    const auto r = Detverify({"merge", a_, bad, "-o", dir_.File("out.db")});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(LineCount(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir_.File("out.db")));
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.File("missing.db"))) << "an input is never created";
  EXPECT_EQ(Detverify({"merge", a_, b_}).code, 2) << "-o is required";
}

}  // namespace
}  // namespace dv
