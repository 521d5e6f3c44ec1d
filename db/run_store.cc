#include "db/run_store.h"

#include <utility>

#include "db/migrations.h"
#include "db/open_database.h"
#include "db/sqlite_handle.h"
#include "db/table_rows.h"

namespace dv::db {
namespace {

// Record validation knows nothing of files; name the file in its messages.
template <typename Record>
void ValidateIn(const std::string& path, void (*validate)(const Record&), const Record& record) {
  try {
    validate(record);
  } catch (const DbError& error) {
    throw DbError(path + ": " + error.what());
  }
}

}  // namespace

RunStore::RunStore(std::unique_ptr<SqliteHandle> handle, bool read_only)
    : handle_(std::move(handle)), read_only_(read_only) {}

RunStore::~RunStore() = default;
RunStore::RunStore(RunStore&& other) noexcept = default;
RunStore& RunStore::operator=(RunStore&& other) noexcept = default;

RunStore RunStore::Open(const std::string& path, const StoreOptions& options) {
  return RunStore(
      std::make_unique<SqliteHandle>(OpenForWriting(path, options.lock_timeout, JournalMode::kWal)),
      /*read_only=*/false);
}

RunStore RunStore::OpenReadOnly(const std::string& path, const StoreOptions& options) {
  auto handle = std::make_unique<SqliteHandle>(OpenForReading(path, options.lock_timeout));
  if (options.verify) VerifyContentOf(*handle);
  return RunStore(std::move(handle), /*read_only=*/true);
}

std::string RunStore::RecordRun(const RunRecord& run) {
  const std::string& path = handle_->Path();
  if (read_only_) throw DbError(path + ": opened read-only; cannot record a run");
  ValidateIn(path, ValidateRun, run);
  RunRecord row = run;
  row.id = ComputeRunId(run);
  row.scenario.id = ComputeScenarioId(run.scenario);
  row.machine.id = ComputeMachineId(run.machine);

  Transaction transaction(*handle_, Transaction::Kind::kWrite);
  if (PutScenario(*handle_, row.scenario) == PutResult::kConflict) {
    // The id covers the canonical text only; the name is the one other column.
    const ScenarioRecord stored = FindScenario(*handle_, row.scenario.id).value();
    throw DbError(path + ": conflicting duplicate: scenario " + row.scenario.id +
                  " is recorded with name '" + stored.name + "'; this run says '" +
                  row.scenario.name + "'");
  }
  if (PutMachine(*handle_, row.machine) == PutResult::kConflict) {
    // The id covers the whole row: only an edited file gets here.
    throw DbError(path + ": stored machine " + row.machine.id + " does not match its id");
  }
  if (PutArtifact(*handle_, row.artifact) == PutResult::kConflict) {
    const ArtifactRecord stored = FindArtifact(*handle_, row.artifact.id).value();
    throw DbError(path + ": conflicting duplicate: artifact " + row.artifact.id +
                  " is recorded with source '" + stored.source + "', config_sha256 " +
                  stored.config_sha256 + ", synthetic " + (stored.synthetic ? "1" : "0") +
                  "; this run says source '" + row.artifact.source + "', config_sha256 " +
                  row.artifact.config_sha256 + ", synthetic " +
                  (row.artifact.synthetic ? "1" : "0"));
  }
  switch (PutRunRow(*handle_, row)) {
    case PutResult::kInserted:
      PutSteps(*handle_, row.id, row.steps);
      PutFloatLogits(*handle_, row.id, row.step0_logits);
      break;
    case PutResult::kAlreadyPresent:  // the same run recorded again: nothing to add
      break;
    case PutResult::kConflict:
      throw DbError(path + ": stored run " + row.id + " does not match its id");
  }
  transaction.Commit();
  return row.id;
}

std::string RunStore::AddAttestation(const AttestationRecord& attestation) {
  const std::string& path = handle_->Path();
  if (read_only_) throw DbError(path + ": opened read-only; cannot add an attestation");
  ValidateIn(path, ValidateAttestation, attestation);
  AttestationRecord row = attestation;
  row.id = ComputeAttestationId(attestation);
  Transaction transaction(*handle_, Transaction::Kind::kWrite);
  if (PutAttestation(*handle_, row) == PutResult::kConflict) {
    const AttestationRecord stored = FindAttestation(*handle_, row.id).value();
    throw DbError(path + ": conflicting duplicate: attestation " + row.id +
                  " is recorded with signer_hint '" + stored.signer_hint + "', created_at " +
                  stored.created_at + "; this one says '" + row.signer_hint + "', " +
                  row.created_at);
  }
  transaction.Commit();
  return row.id;
}

std::vector<ScenarioRecord> RunStore::Scenarios() const {
  Transaction snapshot(*handle_, Transaction::Kind::kRead);
  std::vector<ScenarioRecord> scenarios = ListScenarios(*handle_);
  snapshot.Commit();
  return scenarios;
}

std::vector<RunRecord> RunStore::Runs(const std::string& scenario_id, StepLoading steps) const {
  Transaction snapshot(*handle_, Transaction::Kind::kRead);
  std::vector<RunRecord> runs = ListRuns(*handle_, scenario_id, steps);
  snapshot.Commit();
  return runs;
}

std::optional<RunRecord> RunStore::Run(const std::string& run_id, StepLoading steps) const {
  Transaction snapshot(*handle_, Transaction::Kind::kRead);
  std::optional<RunRecord> run = FindRun(*handle_, run_id, steps);
  snapshot.Commit();
  return run;
}

std::vector<StepRecord> RunStore::Steps(const std::string& run_id) const {
  Transaction snapshot(*handle_, Transaction::Kind::kRead);
  std::vector<StepRecord> steps = ListSteps(*handle_, run_id);
  snapshot.Commit();
  return steps;
}

std::vector<MachineRecord> RunStore::Machines() const {
  Transaction snapshot(*handle_, Transaction::Kind::kRead);
  std::vector<MachineRecord> machines = ListMachines(*handle_);
  snapshot.Commit();
  return machines;
}

std::optional<MachineRecord> RunStore::Machine(const std::string& machine_id) const {
  Transaction snapshot(*handle_, Transaction::Kind::kRead);
  std::optional<MachineRecord> machine = FindMachine(*handle_, machine_id);
  snapshot.Commit();
  return machine;
}

std::vector<ArtifactRecord> RunStore::Artifacts() const {
  Transaction snapshot(*handle_, Transaction::Kind::kRead);
  std::vector<ArtifactRecord> artifacts = ListArtifacts(*handle_);
  snapshot.Commit();
  return artifacts;
}

std::optional<ArtifactRecord> RunStore::Artifact(const std::string& artifact_id) const {
  Transaction snapshot(*handle_, Transaction::Kind::kRead);
  std::optional<ArtifactRecord> artifact = FindArtifact(*handle_, artifact_id);
  snapshot.Commit();
  return artifact;
}

std::vector<AttestationRecord> RunStore::Attestations() const {
  Transaction snapshot(*handle_, Transaction::Kind::kRead);
  std::vector<AttestationRecord> attestations = ListAttestations(*handle_);
  snapshot.Commit();
  return attestations;
}

std::string RunStore::ContentDigest(DigestScope scope) const {
  return ContentDigestOf(*handle_, scope);
}

int RunStore::SchemaVersion() const {
  return static_cast<int>(handle_->QueryInt("PRAGMA user_version", "reading the schema version"));
}

const std::string& RunStore::Path() const { return handle_->Path(); }

}  // namespace dv::db
