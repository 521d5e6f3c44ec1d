// The float_logits table (schema 2): a float run's step-0 logits are stored, read back with its
// steps, covered by its id, copied by a merge and checked against step 0's logits chain; an
// altered blob is refused; a schema-1 DB (made by dropping the table and the version, exactly
// what 0001 alone creates) is still read, migrated and merged, its run ids unchanged.
#include <gtest/gtest.h>

#include <bit>

#include "base/sha256.h"
#include "db/content_digest.h"
#include "db/db_error.h"
#include "db/merge.h"
#include "db/migrations.h"
#include "db/run_store.h"
#include "tests/db/test_fixtures.h"

namespace dv::db {
namespace {

using testing::MakeRun;
using testing::RawSql;

// A float run of `n` steps whose step-0 logits are {1.5, -2, 0.25, v3}, chained as the demo
// chain does: step 0's logits chain is SHA-256(SHA-256("detllm-demo-v1") || bytes).
RunRecord FloatRun(const std::string& label, float v3) {
  RunRecord run = MakeRun(label, 4);
  run.engine = EngineKind::kFloat;
  for (float v : {1.5f, -2.0f, 0.25f, v3}) {
    const auto bits = std::bit_cast<uint32_t>(v);
    for (int b = 0; b < 4; ++b) run.step0_logits.push_back(static_cast<uint8_t>(bits >> (8 * b)));
  }
  Sha256 h0;
  const Sha256Digest start = h0.Update("detllm-demo-v1").Final();
  Sha256 link;
  link.Update(start);
  link.Update(run.step0_logits);
  run.steps[0].logits_chain = link.FinalHex();
  return run;
}

class FloatLogits : public ::testing::Test {
 protected:
  test_files::ScratchDir dir_{"floatlogits"};
};

TEST_F(FloatLogits, StoredReadBackAndInTheId) {
  const std::string path = dir_.File("a.db");
  const RunRecord run = FloatRun("fp32-cpu-b1", 7.0f);
  const std::string id = ComputeRunId(run);
  RunRecord without = run;
  without.step0_logits.clear();
  EXPECT_NE(ComputeRunId(without), id) << "the logits are part of the run's identity";
  {
    RunStore store = RunStore::Open(path);
    store.RecordRun(run);
    store.RecordRun(MakeRun("int8-cpu-b1", 4));
  }
  EXPECT_EQ(RawSql(path, "SELECT count(*) FROM float_logits"), "1");
  EXPECT_EQ(RawSql(path, "SELECT vocab FROM float_logits"), "4");
  const RunStore store = RunStore::OpenReadOnly(path);
  const auto back = store.Run(id, StepLoading::kWithSteps);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->step0_logits, run.step0_logits);
  EXPECT_TRUE(store.Run(id, StepLoading::kWithoutSteps)->step0_logits.empty());
}

TEST_F(FloatLogits, LogitsThatStep0DidNotHashAreRefused) {
  RunRecord run = FloatRun("fp32-cpu-b1", 7.0f);
  run.step0_logits[0] ^= 1;
  RunStore store = RunStore::Open(":memory:");
  try {
    store.RecordRun(run);
    FAIL() << "accepted";
  } catch (const DbError& e) {
    EXPECT_NE(std::string(e.what()).find("do not hash to step 0's logits_chain"), std::string::npos)
        << e.what();
  }
  RunRecord int8 = FloatRun("int8-cpu-b1", 7.0f);
  int8.engine = EngineKind::kInt8;
  EXPECT_THROW(store.RecordRun(int8), DbError) << "float logits on an int8 run";
}

TEST_F(FloatLogits, AnAlteredBlobIsRefusedOnRead) {
  const std::string path = dir_.File("b.db");
  const RunRecord run = FloatRun("fp32-cpu-b1", 7.0f);
  RunStore::Open(path).RecordRun(run);
  RawSql(path, "UPDATE float_logits SET logits = zeroblob(16)");
  // Every read-only open verifies the content first, so the open itself refuses the DB; without
  // that check, reading the run refuses it.
  EXPECT_THROW(RunStore::OpenReadOnly(path), DbError);
  StoreOptions unchecked;
  unchecked.verify = false;
  const RunStore store = RunStore::OpenReadOnly(path, unchecked);
  EXPECT_THROW(store.Run(ComputeRunId(run), StepLoading::kWithSteps), DbError);
}

TEST_F(FloatLogits, MergeCopiesThemAndChecksThemAgain) {
  const std::string a = dir_.File("a.db"), b = dir_.File("b.db"), out = dir_.File("out.db");
  RunStore::Open(a).RecordRun(FloatRun("fp32-cpu-b1", 7.0f));
  RunStore::Open(b).RecordRun(FloatRun("fp32-cpu-b8", 8.0f));
  MergeDatabases({a, b}, out);
  EXPECT_EQ(RawSql(out, "SELECT count(*) FROM float_logits"), "2");
  EXPECT_EQ(RawSql(out, "SELECT group_concat(vocab) FROM float_logits"), "4,4");
  RawSql(b, "UPDATE float_logits SET sha256 = '" + std::string(64, '0') + "'");
  EXPECT_THROW(MergeDatabases({a, b}, dir_.File("out2.db")), DbError);
}

TEST_F(FloatLogits, SchemaOneDatabasesAreReadMigratedAndMerged) {
  const std::string old_db = dir_.File("v1.db"), new_db = dir_.File("v2.db");
  RunRecord old_float = FloatRun("fp32-cpu-b1", 7.0f);
  old_float.step0_logits.clear();  // schema 1 had nowhere to keep them
  const RunRecord old_int8 = MakeRun("int8-cpu-b1", 4);
  {
    RunStore store = RunStore::Open(old_db);
    store.RecordRun(old_int8);
    store.RecordRun(old_float);
  }
  const std::string digest_before = ContentDigest(old_db);
  RawSql(old_db, "DROP TABLE float_logits; PRAGMA user_version = 1");
  ASSERT_EQ(RawSql(old_db, "PRAGMA user_version"), "1");
  // What an attestation signed over the schema-1 file still verifies once it is migrated.
  EXPECT_EQ(ContentDigest(old_db), digest_before);

  {  // Read-only: migrated in memory, the file untouched.
    const RunStore store = RunStore::OpenReadOnly(old_db);
    const auto runs = store.Runs(store.Scenarios().at(0).id, StepLoading::kWithSteps);
    ASSERT_EQ(runs.size(), 2u);
    for (const RunRecord& r : runs) {
      EXPECT_TRUE(r.step0_logits.empty());
      EXPECT_TRUE(r.id == ComputeRunId(old_int8) || r.id == ComputeRunId(old_float))
          << "a schema-1 run keeps the id it had";
    }
    EXPECT_EQ(RawSql(old_db, "PRAGMA user_version"), "1");
  }
  RunStore::Open(new_db).RecordRun(FloatRun("fp32-cpu-b8", 8.0f));
  const std::string out = dir_.File("merged.db");
  const MergeSummary summary = MergeDatabases({old_db, new_db}, out);
  EXPECT_EQ(summary.runs, 3);
  EXPECT_EQ(RawSql(out, "PRAGMA user_version"), std::to_string(NewestSchemaVersion()));
  EXPECT_EQ(RawSql(out, "SELECT count(*) FROM float_logits"), "1");

  {  // Opened for writing: migrated in place, then it takes float logits.
    RunStore store = RunStore::Open(old_db);
    EXPECT_EQ(store.SchemaVersion(), NewestSchemaVersion());
    EXPECT_EQ(store.ContentDigest(DigestScope::kAll), digest_before) << "migrated, unchanged";
    store.RecordRun(FloatRun("fp32-cpu-split", 9.0f));
    EXPECT_NE(store.ContentDigest(DigestScope::kAll), digest_before);
  }
  EXPECT_EQ(RawSql(old_db, "SELECT count(*) FROM float_logits"), "1");
}

TEST_F(FloatLogits, SchemaTwoWithoutTheTableIsRefused) {
  const std::string path = dir_.File("c.db");
  RunStore::Open(path).RecordRun(MakeRun("int8-cpu-b1", 2));
  RawSql(path, "DROP TABLE float_logits");
  EXPECT_THROW(RunStore::OpenReadOnly(path), DbError);
}

}  // namespace
}  // namespace dv::db
