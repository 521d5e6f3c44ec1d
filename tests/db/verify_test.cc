// VerifyContentOf / VerifyDatabase (db/verify.h) against files edited behind the library's back,
// each the way someone altering their records would: rows changed with plain SQL, or rows whose
// ids were recomputed so that only the cross-row checks can notice.
#include "db/verify.h"

#include <gtest/gtest.h>

#include <string>

#include "db/run_store.h"
#include "tests/db/test_fixtures.h"

namespace dv::db {
namespace {

using testing::MakeRun;
using testing::RawSql;
using testing::Stored;

class DbVerify : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("results.db");
    RunStore store = RunStore::Open(path_);
    first_ = store.RecordRun(MakeRun("int8-cpu-b1", 8));
    second_ = store.RecordRun(MakeRun("int8-cpu-b4", 8));
  }

  // The message VerifyDatabase throws, or "" when it accepts the file.
  std::string Problem() const {
    try {
      VerifyDatabase(path_);
    } catch (const DbError& error) {
      return error.what();
    }
    return "";
  }

  // OpenReadOnly, the opener of every reader, must refuse the file as VerifyDatabase does.
  void ExpectReadersRefuse(const std::string& fragment) const {
    const std::string problem = Problem();
    EXPECT_NE(problem.find(fragment), std::string::npos) << problem;
    EXPECT_NE(problem.find(path_), std::string::npos) << problem;
    EXPECT_THROW(RunStore::OpenReadOnly(path_), DbError);
  }

  testing::ScratchDir dir_{"verify"};
  std::string path_;
  std::string first_;
  std::string second_;
};

TEST_F(DbVerify, AcceptsWhatTheLibraryWrote) {
  EXPECT_EQ(Problem(), "");
  const VerifySummary summary = VerifyDatabase(path_);
  EXPECT_EQ(summary.runs, 2);
  EXPECT_EQ(summary.steps, 16);
  EXPECT_EQ(summary.machines, 1);
  EXPECT_NO_THROW(RunStore::OpenReadOnly(path_));
}

TEST_F(DbVerify, RunWithFewerStepsThanDeclared) {
  // The reported case: 8 steps declared, 5 stored.
  RawSql(path_, "DELETE FROM steps WHERE run_id = '" + first_ + "' AND step >= 5");
  ExpectReadersRefuse("n_steps 8 but 5 steps");
  EXPECT_NE(Problem().find("run " + first_), std::string::npos) << Problem();
}

TEST_F(DbVerify, RunWhoseContentNoLongerMatchesItsId) {
  RawSql(path_, "UPDATE runs SET wall_ms = wall_ms + 1 WHERE id = '" + second_ + "'");
  ExpectReadersRefuse("does not match its content");
  EXPECT_NE(Problem().find("run " + second_), std::string::npos) << Problem();
}

TEST_F(DbVerify, StepChainEditedInPlace) {
  RawSql(path_, "UPDATE steps SET token_chain = '" + Sha256Hex("x") + "' WHERE run_id = '" +
                    first_ + "' AND step = 3");
  ExpectReadersRefuse("run " + first_);
}

TEST_F(DbVerify, FinalChainsThatAreNotTheLastStep) {
  RawSql(path_, "UPDATE runs SET final_logits_chain = '" + Sha256Hex("other") + "' WHERE id = '" +
                    first_ + "'");
  ExpectReadersRefuse("final_logits_chain is not the last step's");
}

TEST_F(DbVerify, UnknownStatus) {
  RawSql(path_, "UPDATE runs SET status = 'great' WHERE id = '" + first_ + "'");
  ExpectReadersRefuse("has status 'great', not one of");
}

TEST_F(DbVerify, MalformedConfigJson) {
  RawSql(path_, "UPDATE runs SET config_json = '{\"batch\": ' WHERE id = '" + first_ + "'");
  ExpectReadersRefuse("config_json is not canonical JSON");
}

TEST_F(DbVerify, StepsWithoutARun) {
  const std::string ghost = Sha256Hex("ghost");
  RawSql(path_, "INSERT INTO steps VALUES ('" + ghost + "', 0, 1, '" + Sha256Hex("l") + "', '" +
                    Sha256Hex("t") + "')");
  ExpectReadersRefuse("steps of run " + ghost + ", which is not in the database");
}

TEST_F(DbVerify, RunWithoutItsMachine) {
  RawSql(path_, "DELETE FROM machines");
  ExpectReadersRefuse("which is not in the database");
}

TEST_F(DbVerify, EditedMachine) {
  RawSql(path_, "UPDATE machines SET fingerprint_json = '{\"cpu\":\"box-z\"}'");
  ExpectReadersRefuse("machine ");
}

TEST_F(DbVerify, ChainThatReConvergesAfterDiverging) {
  // A run that differs from another up to step 2 and agrees with it from step 3 on, with its
  // id recomputed: every per-run rule holds, but no hash chain can do this.
  const RunRecord original = Stored(MakeRun("int8-cpu-b1", 8));
  RunRecord forged = MakeRun("int8-cpu-b4", 8);
  for (size_t step = 3; step < forged.steps.size(); ++step) {
    forged.steps[step].logits_chain = original.steps[step].logits_chain;
  }
  forged.final_logits_chain = forged.steps.back().logits_chain;
  RawSql(path_, "DELETE FROM steps WHERE run_id = '" + second_ + "'");
  RawSql(path_, "DELETE FROM runs WHERE id = '" + second_ + "'");
  RunStore::Open(path_).RecordRun(forged);  // the write side cannot know the logits
  const std::string problem = Problem();
  EXPECT_NE(problem.find("logits chain at step 3 equals that of run"), std::string::npos)
      << problem;
  EXPECT_NE(problem.find("cannot re-converge"), std::string::npos) << problem;
  EXPECT_THROW(RunStore::OpenReadOnly(path_), DbError);
}

TEST_F(DbVerify, IdenticalPrefixesAreNotAReConvergence) {
  // Runs that agree up to a step and then diverge are what a batch-dependent engine produces.
  RunRecord diverging = MakeRun("int8-cpu-b1", 8);
  diverging.configuration = "float-cpu-b4";
  diverging.engine = EngineKind::kFloat;
  for (size_t step = 5; step < diverging.steps.size(); ++step) {
    diverging.steps[step].logits_chain = Sha256Hex("float" + std::to_string(step));
  }
  diverging.final_logits_chain = diverging.steps.back().logits_chain;
  RunStore::Open(path_).RecordRun(diverging);
  EXPECT_EQ(Problem(), "");
}

TEST_F(DbVerify, IntegrityCheckFindsAnIndexThatDisagreesWithItsTable) {
  // The index's definition is rewritten so that its entries no longer match the rows: the
  // content checks cannot see it, PRAGMA integrity_check does.
  RawSql(path_,
         "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = 'CREATE INDEX "
         "runs_by_scenario ON runs (configuration, scenario_id)' WHERE name = "
         "'runs_by_scenario'");
  const std::string problem = Problem();
  EXPECT_NE(problem.find("integrity_check failed"), std::string::npos) << problem;
}

}  // namespace
}  // namespace dv::db
