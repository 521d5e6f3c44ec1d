// Merging result DBs (db/merge.h): union, idempotence, commutativity, read-only inputs,
// refusals that leave the output untouched.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "db/migrations.h"
#include "db/run_store.h"
#include "tests/db/test_fixtures.h"

namespace dv::db {
namespace {

using testing::MakeAttestation;
using testing::MakeRun;
using testing::RawSql;
using testing::ReadBytes;

class DbMerge : public ::testing::Test {
 protected:
  void SetUp() override {
    // Three machines' DBs; run "shared" is in a and b (the same run, e.g. a copied file).
    a_ = dir_.File("a.db");
    b_ = dir_.File("b.db");
    c_ = dir_.File("c.db");
    RunStore a = RunStore::Open(a_);
    a.RecordRun(MakeRun("int8-cpu-b1", 16, "box-a"));
    a.RecordRun(MakeRun("shared", 16, "box-a"));
    a.AddAttestation(MakeAttestation("box-a"));
    RunStore b = RunStore::Open(b_);
    b.RecordRun(MakeRun("int8-cpu-b8", 16, "box-b"));
    b.RecordRun(MakeRun("shared", 16, "box-a"));
    b.AddAttestation(MakeAttestation("box-b"));
    RunStore c = RunStore::Open(c_);
    RunRecord crashed = MakeRun("int8-cuda-b1", 0, "box-c");
    crashed.backend = BackendKind::kCuda;
    crashed.status = RunStatus::kCrashed;
    c.RecordRun(crashed);
  }

  std::string Out(const std::string& name) const { return dir_.File(name); }

  testing::ScratchDir dir_{"merge"};
  std::string a_, b_, c_;
};

// The files a failed merge could leave beside `out`.
std::vector<std::string> LeftoversBeside(const std::filesystem::path& directory) {
  std::vector<std::string> leftovers;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".merge-") != std::string::npos) leftovers.push_back(name);
  }
  return leftovers;
}

TEST_F(DbMerge, ResultIsTheUnionOfTheInputs) {
  const std::string out = Out("fleet.db");
  const MergeSummary summary = MergeDatabases({a_, b_, c_}, out);
  EXPECT_EQ(summary.runs, 4);
  EXPECT_EQ(summary.machines, 3);
  EXPECT_EQ(summary.artifacts, 1);
  EXPECT_EQ(summary.scenarios, 1);
  EXPECT_EQ(summary.steps, 48);
  EXPECT_EQ(summary.attestations, 2);

  const RunStore fleet = RunStore::OpenReadOnly(out);
  ASSERT_EQ(fleet.Scenarios().size(), 1u);
  const std::vector<RunRecord> runs = fleet.Runs(fleet.Scenarios()[0].id, StepLoading::kWithSteps);
  ASSERT_EQ(runs.size(), 4u);
  for (const RunRecord& run : runs) {
    EXPECT_EQ(static_cast<int64_t>(run.steps.size()), run.n_steps);
    EXPECT_EQ(ComputeRunId(run), run.id);
  }
  EXPECT_EQ(testing::IncompleteRuns(out), "0");
  EXPECT_EQ(RawSql(out, "PRAGMA integrity_check"), "ok");
}

TEST_F(DbMerge, OrderOfInputsDoesNotMatter) {
  MergeDatabases({a_, b_, c_}, Out("abc.db"));
  MergeDatabases({c_, b_, a_}, Out("cba.db"));
  MergeDatabases({b_, c_, a_}, Out("bca.db"));
  const std::string digest = ContentDigest(Out("abc.db"));
  EXPECT_EQ(ContentDigest(Out("cba.db")), digest);
  EXPECT_EQ(ContentDigest(Out("bca.db")), digest);
  // Merging step by step gives the same as merging at once.
  MergeDatabases({a_}, Out("stepwise.db"));
  MergeDatabases({c_}, Out("stepwise.db"));
  MergeDatabases({b_}, Out("stepwise.db"));
  EXPECT_EQ(ContentDigest(Out("stepwise.db")), digest);
}

TEST_F(DbMerge, MergingAgainChangesNothing) {
  MergeDatabases({a_}, Out("a-only.db"));
  EXPECT_EQ(ContentDigest(Out("a-only.db")), ContentDigest(a_));
  MergeDatabases({a_, a_}, Out("a-twice.db"));
  EXPECT_EQ(ContentDigest(Out("a-twice.db")), ContentDigest(a_));

  const std::string out = Out("fleet.db");
  MergeDatabases({a_, b_}, out);
  const std::string digest = ContentDigest(out);
  MergeDatabases({a_}, out);  // out is an input too
  EXPECT_EQ(ContentDigest(out), digest);
  MergeDatabases({out, b_}, Out("again.db"));
  EXPECT_EQ(ContentDigest(Out("again.db")), digest);
  MergeDatabases({out, out}, out);
  EXPECT_EQ(ContentDigest(out), digest);
  MergeDatabases({}, out);
  EXPECT_EQ(ContentDigest(out), digest);
}

TEST_F(DbMerge, InputsAreNotModified) {
  const std::string a_before = ReadBytes(a_);
  const std::string b_before = ReadBytes(b_);
  MergeDatabases({a_, b_}, Out("fleet.db"));
  EXPECT_EQ(ReadBytes(a_), a_before);
  EXPECT_EQ(ReadBytes(b_), b_before);
}

TEST_F(DbMerge, MergedDbAcceptsNewRuns) {
  const std::string out = Out("fleet.db");
  MergeDatabases({a_, b_}, out);
  RunStore fleet = RunStore::Open(out);
  fleet.RecordRun(MakeRun("int8-ref-b1", 8, "box-d"));
  EXPECT_EQ(fleet.Runs(fleet.Scenarios()[0].id).size(), 4u);
}

TEST_F(DbMerge, ConflictingDuplicateIsRefusedAndOutputUntouched) {
  // The same artifact id described differently on another machine.
  const std::string conflicting = Out("conflicting.db");
  RunStore::Open(conflicting)
      .RecordRun(MakeRun("int8-cpu-b1", 4, "box-z", "artifact:/data/models/qwen3"));

  const std::string fresh = Out("fresh.db");
  for (const std::vector<std::string>& inputs :
       {std::vector<std::string>{a_, conflicting}, std::vector<std::string>{conflicting, a_}}) {
    try {
      MergeDatabases(inputs, fresh);
      ADD_FAILURE() << "merged a conflicting duplicate";
    } catch (const DbError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("conflicting duplicate: artifact"), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    EXPECT_FALSE(std::filesystem::exists(fresh));
  }

  const std::string existing = Out("existing.db");
  MergeDatabases({b_}, existing);
  const std::string before = ReadBytes(existing);
  EXPECT_THROW(MergeDatabases({a_, conflicting}, existing), DbError);
  EXPECT_EQ(ReadBytes(existing), before);
  EXPECT_TRUE(LeftoversBeside(dir_.Path()).empty());
}

TEST_F(DbMerge, TamperedRowIsRefused) {
  const std::string tampered = Out("tampered.db");
  std::filesystem::copy_file(a_, tampered);
  RawSql(tampered, "UPDATE runs SET wall_ms = wall_ms + 1 WHERE configuration = 'shared'");
  try {
    MergeDatabases({b_, tampered}, Out("fleet.db"));
    ADD_FAILURE() << "merged a tampered run";
  } catch (const DbError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(tampered + ": ", 0), 0u) << message;
    EXPECT_NE(message.find("does not match its content"), std::string::npos) << message;
  }
  EXPECT_FALSE(std::filesystem::exists(Out("fleet.db")));

  const std::string missing_step = Out("missing-step.db");
  std::filesystem::copy_file(a_, missing_step);
  RawSql(missing_step, "DELETE FROM steps WHERE step = 3");
  EXPECT_THROW(MergeDatabases({missing_step}, Out("fleet.db")), DbError);
}

TEST_F(DbMerge, UnknownSchemaVersionIsRefused) {
  const std::string future = Out("future.db");
  std::filesystem::copy_file(c_, future);
  RawSql(future, "PRAGMA user_version = " + std::to_string(NewestSchemaVersion() + 1));
  const std::string existing = Out("existing.db");
  MergeDatabases({a_}, existing);
  const std::string before = ReadBytes(existing);
  try {
    MergeDatabases({b_, future}, existing);
    ADD_FAILURE() << "merged a DB of an unknown schema version";
  } catch (const DbError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(future + ": schema version", 0), 0u) << message;
    EXPECT_NE(message.find("newer"), std::string::npos) << message;
  }
  EXPECT_EQ(ReadBytes(existing), before);
}

TEST_F(DbMerge, OutputLeftWithAPendingLogKeepsItsCommittedRows) {
  // A writer that died before its checkpoint leaves committed rows only in the -wal file; the
  // merge into that output must keep them (SQLite recovers the log when the merge opens it).
  const std::string hot = Out("hot.db");
  std::filesystem::copy_file(a_, hot);
  const std::string fleet = Out("fleet.db");
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(hot.c_str(), &writer), SQLITE_OK);
  const AttestationRecord late = MakeAttestation("late-writer");
  const std::string insert =
      "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; INSERT INTO attestations VALUES "
      "('" +
      ComputeAttestationId(late) + "', '" + late.envelope_json + "', '" + late.signer_hint +
      "', '" + late.created_at + "')";
  ASSERT_EQ(sqlite3_exec(writer, insert.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  std::filesystem::copy_file(hot, fleet);
  std::filesystem::copy_file(hot + "-wal", fleet + "-wal");
  ASSERT_GT(std::filesystem::file_size(fleet + "-wal"), 0u);
  sqlite3_close(writer);

  MergeDatabases({b_}, fleet);
  EXPECT_EQ(RawSql(fleet, "PRAGMA integrity_check"), "ok");
  MergeDatabases({hot, b_}, Out("expected.db"));
  EXPECT_EQ(ContentDigest(fleet), ContentDigest(Out("expected.db")));
  EXPECT_EQ(RunStore::OpenReadOnly(fleet).Attestations().size(), 3u);
}

TEST_F(DbMerge, GarbageOrMissingInputIsRefused) {
  const std::string garbage = Out("garbage.db");
  testing::WriteBytes(garbage, std::string(4096, 'x'));
  const std::string out = Out("fleet.db");
  try {
    MergeDatabases({a_, garbage}, out);
    ADD_FAILURE() << "merged a garbage file";
  } catch (const DbError& error) {
    EXPECT_EQ(std::string(error.what()).rfind(garbage + ": not an SQLite database", 0), 0u)
        << error.what();
  }
  const std::string missing = Out("missing.db");
  try {
    MergeDatabases({a_, missing}, out);
    ADD_FAILURE() << "merged a missing file";
  } catch (const DbError& error) {
    EXPECT_EQ(std::string(error.what()).rfind(missing + ": cannot open", 0), 0u) << error.what();
  }
  EXPECT_FALSE(std::filesystem::exists(missing));
  EXPECT_FALSE(std::filesystem::exists(out));
  // An output that is not a detverify DB is an input like any other: refused, untouched.
  EXPECT_THROW(MergeDatabases({a_}, garbage), DbError);
  EXPECT_EQ(ReadBytes(garbage), std::string(4096, 'x'));
}

}  // namespace
}  // namespace dv::db
