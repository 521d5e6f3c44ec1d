// MergeDatabases, in two phases. Staging: every input is read through a read-only connection,
// verified, and its rows are written into a private temporary file beside the output, in one
// transaction; a conflicting duplicate between inputs stops here and the output is never touched.
// Landing: a new output is the staged file itself, put in place with link(2), which refuses to
// replace a file another process created meanwhile; an existing output takes the staged rows in
// one write transaction on the file itself, under the same lock as `run` and `attest sign`, so
// that concurrent writers and merges all land and nobody keeps writing to a replaced file.
#include "db/merge.h"

#include <filesystem>
#include <system_error>

#include "db/db_error.h"
#include "db/open_database.h"
#include "db/records.h"
#include "db/run_store.h"
#include "db/sqlite_handle.h"
#include "db/staged_file.h"
#include "db/table_rows.h"
#include "db/verify.h"

namespace dv::db {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStagedInfix = ".merge-";

void PutOrThrow(PutResult result, const std::string& input, const std::string& what,
                const std::string& id) {
  if (result == PutResult::kConflict) {
    throw DbError(input + ": conflicting duplicate: " + what + " " + id +
                  " differs from the row with the same id in another input");
  }
}

// Copies the rows of `input`, verified first, into the staging file.
void StageOne(const std::string& input, const SqliteHandle& staging) {
  const SqliteHandle in = OpenForReading(input, kDefaultLockTimeout);
  Transaction snapshot(in, Transaction::Kind::kRead);
  // Ids are checked against content, so a row can only enter the output as the library would
  // have written it; rows referring to each other go in after what they refer to.
  VerifyContentOf(in);
  for (const MachineRecord& machine : ListMachines(in)) {
    PutOrThrow(PutMachine(staging, machine), input, "machine", machine.id);
  }
  for (const ArtifactRecord& artifact : ListArtifacts(in)) {
    PutOrThrow(PutArtifact(staging, artifact), input, "artifact", artifact.id);
  }
  for (const ScenarioRecord& scenario : ListScenarios(in)) {
    PutOrThrow(PutScenario(staging, scenario), input, "scenario", scenario.id);
  }
  for (const std::string& id : ListRunIds(in)) {
    const RunRecord run = FindRun(in, id, StepLoading::kWithSteps).value();
    const PutResult result = PutRunRow(staging, run);
    PutOrThrow(result, input, "run", run.id);
    if (result == PutResult::kInserted) {
      PutSteps(staging, run.id, run.steps);
      PutFloatLogits(staging, run.id, run.step0_logits);
    }
  }
  for (const AttestationRecord& attestation : ListAttestations(in)) {
    PutOrThrow(PutAttestation(staging, attestation), input, "attestation", attestation.id);
  }
  snapshot.Commit();
}

MergeSummary Count(const SqliteHandle& handle) {
  MergeSummary summary;
  summary.machines = handle.QueryInt("SELECT count(*) FROM machines", "counting");
  summary.artifacts = handle.QueryInt("SELECT count(*) FROM artifacts", "counting");
  summary.scenarios = handle.QueryInt("SELECT count(*) FROM scenarios", "counting");
  summary.runs = handle.QueryInt("SELECT count(*) FROM runs", "counting");
  summary.steps = handle.QueryInt("SELECT count(*) FROM steps", "counting");
  summary.attestations = handle.QueryInt("SELECT count(*) FROM attestations", "counting");
  return summary;
}

// Detaches the staged file when the landing ends, however it ends.
class Attached {
 public:
  Attached(const SqliteHandle& handle, const std::string& path) : handle_(handle) {
    handle_.Prepare("ATTACH DATABASE ?1 AS incoming", "attaching the staged rows")
        .Bind(1, path)
        .Run();
  }
  ~Attached() { Detach(); }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  void Detach() const noexcept {
    try {
      handle_.Exec("DETACH DATABASE incoming", "detaching the staged rows");
    } catch (const DbError&) {  // the connection closes next; nothing is left attached
    }
  }
  const SqliteHandle& handle_;
};

// The staged rows into an existing output, in one write transaction. Tables with an id column
// are compared row for row where ids meet (both files come from the same migrations, so their
// columns agree); steps follow their new runs.
MergeSummary LandInto(const std::string& out_path, const std::string& staged_path) {
  const SqliteHandle out = OpenForWriting(out_path, kDefaultLockTimeout, JournalMode::kWal);
  // The output is one more input: verify it before adding to it (outside the lock; what other
  // processes add meanwhile goes through the library's own checks).
  VerifyContentOf(out);
  const Attached incoming(out, staged_path);
  Transaction transaction(out, Transaction::Kind::kWrite);
  for (const char* table : {"machines", "artifacts", "scenarios", "runs", "attestations"}) {
    const std::string name = table;
    const std::string conflict = out.QueryText(
        "SELECT i.id FROM incoming." + name + " i WHERE i.id IN (SELECT id FROM main." + name +
            ") AND NOT EXISTS (SELECT * FROM main." + name + " WHERE id = i.id INTERSECT " +
            "SELECT * FROM incoming." + name + " WHERE id = i.id) ORDER BY i.id LIMIT 1",
        "comparing " + name);
    if (!conflict.empty()) {
      throw DbError(out_path + ": conflicting duplicate: " + name.substr(0, name.size() - 1) + " " +
                    conflict + " of the inputs differs from the row with the same id in " +
                    out_path + "; left unchanged");
    }
    out.Exec("INSERT INTO main." + name + " SELECT * FROM incoming." + name +
                 " WHERE id NOT IN (SELECT id FROM main." + name + ")",
             "adding " + name);
  }
  out.Exec(
      "INSERT INTO main.steps SELECT * FROM incoming.steps i WHERE NOT EXISTS "
      "(SELECT 1 FROM main.steps s WHERE s.run_id = i.run_id AND s.step = i.step)",
      "adding steps");
  // A run's step-0 float logits come with the run (its id covers their SHA-256).
  out.Exec(
      "INSERT INTO main.float_logits SELECT * FROM incoming.float_logits i WHERE NOT EXISTS "
      "(SELECT 1 FROM main.float_logits f WHERE f.run_id = i.run_id)",
      "adding float logits");
  const MergeSummary summary = Count(out);
  transaction.Commit();
  return summary;
}

}  // namespace

MergeSummary MergeDatabases(const std::vector<std::string>& inputs, const std::string& out_path) {
  if (out_path.empty() || out_path == ":memory:" || out_path.starts_with("file:")) {
    throw DbError("merge: '" + out_path + "' is not a file path for the output");
  }
  RemoveStaleStagedFiles(out_path, kStagedInfix);
  const StagedFile staged(out_path, kStagedInfix);
  MergeSummary summary;
  {
    const SqliteHandle staging = OpenForWriting(staged.Path(), kDefaultLockTimeout,
                                                JournalMode::kRollback, Creation::kInPlace);
    // The file is private until it lands and is synced once below; per-commit syncs buy
    // nothing here.
    staging.Exec("PRAGMA synchronous = OFF", "configuring the merge output");
    Transaction transaction(staging, Transaction::Kind::kWrite);
    for (const std::string& input : inputs) StageOne(input, staging);
    summary = Count(staging);
    transaction.Commit();
  }
  std::error_code error;
  if (!fs::exists(out_path, error)) {
    RequireNoOrphanedLog(out_path);
    if (staged.PlaceIfAbsent(out_path)) return summary;
    // Another merge or run created the output meanwhile: add to it like to any existing one.
  }
  return LandInto(out_path, staged.Path());
}

}  // namespace dv::db
