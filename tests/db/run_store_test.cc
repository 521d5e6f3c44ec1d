// Recording and reading back runs, steps, machines, artifacts, scenarios and attestations
// (db/run_store.h).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "db/run_store.h"
#include "tests/db/test_fixtures.h"

namespace dv::db {
namespace {

using testing::MakeAttestation;
using testing::MakeRun;
using testing::Stored;

RunRecord WithoutSteps(RunRecord run) {
  run.steps.clear();
  return run;
}

TEST(DbRunStore, RecordsAndReadsBackEveryTable) {
  RunStore store = RunStore::Open(":memory:");
  const RunRecord b1 = MakeRun("int8-cpu-b1", 16);
  const RunRecord b8 = MakeRun("int8-cpu-b8", 16, "box-b");
  const std::string b1_id = store.RecordRun(b1);
  const std::string b8_id = store.RecordRun(b8);
  EXPECT_EQ(b1_id, ComputeRunId(b1));
  EXPECT_EQ(b8_id, ComputeRunId(b8));

  ASSERT_EQ(store.Scenarios().size(), 1u);
  const ScenarioRecord scenario = store.Scenarios()[0];
  EXPECT_EQ(scenario, Stored(b1).scenario);

  const std::vector<RunRecord> with_steps = store.Runs(scenario.id, StepLoading::kWithSteps);
  ASSERT_EQ(with_steps.size(), 2u);  // ordered by configuration
  EXPECT_EQ(with_steps[0], Stored(b1));
  EXPECT_EQ(with_steps[1], Stored(b8));
  const std::vector<RunRecord> without_steps = store.Runs(scenario.id);
  ASSERT_EQ(without_steps.size(), 2u);
  EXPECT_EQ(without_steps[0], WithoutSteps(Stored(b1)));
  EXPECT_EQ(without_steps[0].n_steps, 16);

  EXPECT_EQ(store.Run(b8_id), Stored(b8));
  EXPECT_EQ(store.Run(b8_id, StepLoading::kWithoutSteps), WithoutSteps(Stored(b8)));
  EXPECT_EQ(store.Steps(b1_id), b1.steps);

  EXPECT_EQ(store.Machines().size(), 2u);
  EXPECT_EQ(store.Machine(Stored(b8).machine.id), Stored(b8).machine);
  ASSERT_EQ(store.Artifacts().size(), 1u);
  EXPECT_EQ(store.Artifact(b1.artifact.id), b1.artifact);
}

TEST(DbRunStore, UnknownIdsReadAsAbsent) {
  const RunStore store = RunStore::Open(":memory:");
  const std::string id(64, '0');
  EXPECT_FALSE(store.Run(id).has_value());
  EXPECT_FALSE(store.Machine(id).has_value());
  EXPECT_FALSE(store.Artifact(id).has_value());
  EXPECT_TRUE(store.Runs(id).empty());
  EXPECT_TRUE(store.Steps(id).empty());
}

TEST(DbRunStore, RecordingTheSameRunTwiceIsANoOp) {
  RunStore store = RunStore::Open(":memory:");
  const RunRecord run = MakeRun("int8-cpu-b1", 32);
  const std::string id = store.RecordRun(run);
  const std::string digest = store.ContentDigest();
  EXPECT_EQ(store.RecordRun(run), id);
  EXPECT_EQ(store.RecordRun(Stored(run)), id);  // with its ids filled in
  EXPECT_EQ(store.ContentDigest(), digest);
  EXPECT_EQ(store.Steps(id).size(), 32u);
}

TEST(DbRunStore, RunWithoutStepsKeepsItsAbsentChains) {
  RunStore store = RunStore::Open(":memory:");
  RunRecord run = MakeRun("int8-cuda-b1", 0);
  run.backend = BackendKind::kCuda;
  run.status = RunStatus::kSkipped;
  run.status_detail = "no CUDA device";
  const std::string id = store.RecordRun(run);
  const std::optional<RunRecord> stored = store.Run(id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(*stored, Stored(run));
  EXPECT_FALSE(stored->final_logits_chain.has_value());
  EXPECT_EQ(stored->n_steps, 0);
}

TEST(DbRunStore, InvalidRunIsRefusedWithoutWriting) {
  RunStore store = RunStore::Open(":memory:");
  RunRecord run = MakeRun("int8-cpu-b1", 4);
  run.n_steps = 5;
  try {
    store.RecordRun(run);
    ADD_FAILURE() << "accepted an invalid run";
  } catch (const DbError& error) {
    EXPECT_EQ(std::string(error.what()).rfind(":memory:: invalid run", 0), 0u) << error.what();
  }
  EXPECT_TRUE(store.Scenarios().empty());
  EXPECT_TRUE(store.Machines().empty());
}

TEST(DbRunStore, ConflictingArtifactIsRefusedAndRolledBack) {
  RunStore store = RunStore::Open(":memory:");
  store.RecordRun(MakeRun("int8-cpu-b1", 4));
  const std::string digest = store.ContentDigest();
  // Same model file, described differently, from a new machine: nothing of it may stay.
  const RunRecord moved = MakeRun("int8-cpu-b8", 4, "box-c", "artifact:/home/someone/model");
  try {
    store.RecordRun(moved);
    ADD_FAILURE() << "accepted a conflicting artifact";
  } catch (const DbError& error) {
    EXPECT_NE(std::string(error.what()).find("conflicting duplicate: artifact"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(store.ContentDigest(), digest);
  EXPECT_EQ(store.Machines().size(), 1u);
}

TEST(DbRunStore, ConflictingScenarioNameIsRefused) {
  RunStore store = RunStore::Open(":memory:");
  store.RecordRun(MakeRun("int8-cpu-b1", 4));
  RunRecord renamed = MakeRun("int8-cpu-b8", 4);
  renamed.scenario.name = "sonnet-18";
  EXPECT_THROW(store.RecordRun(renamed), DbError);
}

TEST(DbRunStore, AttestationsRoundTrip) {
  RunStore store = RunStore::Open(":memory:");
  const AttestationRecord box = MakeAttestation("box-a");
  const AttestationRecord merger = MakeAttestation("merger");
  const std::string id = store.AddAttestation(box);
  EXPECT_EQ(id, Sha256Hex(box.envelope_json));
  store.AddAttestation(merger);
  EXPECT_EQ(store.AddAttestation(box), id);  // again: no-op
  const std::vector<AttestationRecord> stored = store.Attestations();
  ASSERT_EQ(stored.size(), 2u);
  AttestationRecord expected = box;
  expected.id = id;
  EXPECT_TRUE(stored[0] == expected || stored[1] == expected);

  AttestationRecord later = box;
  later.created_at = "2025-02-01T00:00:00Z";
  EXPECT_THROW(store.AddAttestation(later), DbError);
  EXPECT_EQ(store.Attestations().size(), 2u);
}

TEST(DbRunStore, ResultsDigestIgnoresAttestations) {
  RunStore store = RunStore::Open(":memory:");
  store.RecordRun(MakeRun("int8-cpu-b1", 4));
  const std::string all = store.ContentDigest();
  const std::string results = store.ContentDigest(DigestScope::kResultsOnly);
  store.AddAttestation(MakeAttestation("box-a"));
  EXPECT_NE(store.ContentDigest(), all);
  EXPECT_EQ(store.ContentDigest(DigestScope::kResultsOnly), results);
}

TEST(DbRunStore, DigestDoesNotDependOnInsertOrder) {
  RunStore forward = RunStore::Open(":memory:");
  RunStore backward = RunStore::Open(":memory:");
  std::vector<RunRecord> runs;
  for (int i = 0; i < 6; ++i) {
    runs.push_back(MakeRun("config-" + std::to_string(i), 8, i % 2 == 0 ? "box-a" : "box-b"));
  }
  for (const RunRecord& run : runs) forward.RecordRun(run);
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) backward.RecordRun(*it);
  EXPECT_EQ(forward.ContentDigest(), backward.ContentDigest());
}

TEST(DbRunStore, ReadOnlyStoreRefusesWrites) {
  testing::ScratchDir dir("read-only-store");
  const std::string path = dir.File("results.db");
  { RunStore::Open(path).RecordRun(MakeRun("int8-cpu-b1", 4)); }
  const std::string before = testing::ReadBytes(path);
  {
    RunStore reader = RunStore::OpenReadOnly(path);
    EXPECT_TRUE(reader.ReadOnly());
    EXPECT_EQ(reader.Scenarios().size(), 1u);
    EXPECT_THROW(reader.RecordRun(MakeRun("int8-cpu-b8", 4)), DbError);
    EXPECT_THROW(reader.AddAttestation(MakeAttestation("box-a")), DbError);
  }
  EXPECT_EQ(testing::ReadBytes(path), before);
}

// Engine, backend and status are enums inside the program; a row spelling anything else (a
// tampered file, a newer detverify's value) is refused when read, naming the run and the value.
TEST(DbRunStore, UnknownEngineBackendOrStatusIsRefusedOnRead) {
  testing::ScratchDir dir("unknown-kind");
  const std::string path = dir.File("results.db");
  const RunRecord run = MakeRun("int8-cpu-b1", 4);
  { RunStore::Open(path).RecordRun(run); }
  for (const auto& [column, value, words] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"backend", "metal", "has backend 'metal', not one of reference, cpu, cuda"},
           {"engine", "int4", "has engine 'int4', not one of int8, float"},
           {"status", "fine",
            "has status 'fine', not one of ok, crashed, timeout, killed, skipped, error"}}) {
    const std::string original = testing::RawSql(path, "SELECT " + column + " FROM runs");
    testing::RawSql(path, "UPDATE runs SET " + column + " = '" + value + "'");
    try {
      // Refused when opened: every reader verifies the whole file first.
      const RunStore store = RunStore::OpenReadOnly(path);
      store.Runs(store.Scenarios().at(0).id);
      ADD_FAILURE() << "read a run with " << column << " " << value;
    } catch (const DbError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(words), std::string::npos) << message;
      EXPECT_EQ(message.rfind(path + ": run ", 0), 0u) << message;
    }
    testing::RawSql(path, "UPDATE runs SET " + column + " = '" + original + "'");
  }
  const RunStore store = RunStore::OpenReadOnly(path);
  EXPECT_EQ(store.Runs(store.Scenarios().at(0).id).size(), 1u);
}

TEST(DbRunStore, LockedDatabaseFailsAfterTheTimeoutInsteadOfHanging) {
  testing::ScratchDir dir("locked");
  const std::string path = dir.File("locked.db");
  RunStore store = RunStore::Open(path, StoreOptions{std::chrono::milliseconds(300)});

  // Another connection holds the write lock.
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const auto start = std::chrono::steady_clock::now();
  try {
    store.RecordRun(MakeRun("int8-cpu-b1", 4));
    ADD_FAILURE() << "wrote through another connection's lock";
  } catch (const DbError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(path + ": database is locked", 0), 0u) << message;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // Readers are not blocked by a writer in WAL mode.
  EXPECT_TRUE(store.Scenarios().empty());
  ASSERT_EQ(sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(holder);
  EXPECT_NO_THROW(store.RecordRun(MakeRun("int8-cpu-b1", 4)));
}

TEST(DbRunStore, StoreIsMovable) {
  RunStore first = RunStore::Open(":memory:");
  const std::string id = first.RecordRun(MakeRun("int8-cpu-b1", 2));
  RunStore second = std::move(first);
  EXPECT_TRUE(second.Run(id).has_value());
  EXPECT_EQ(second.Path(), ":memory:");
}

}  // namespace
}  // namespace dv::db
