// The detverify result store: one SQLite file of machines, artifacts, scenarios, runs with every
// step's chain hashes, and attestations (db/README.md). Every expected failure throws DbError
// with a one-line "<file>: <problem>" message.
//
//   dv::db::RunStore store = dv::db::RunStore::Open("results.db");
//   std::string id = store.RecordRun(run);  // one transaction: the whole run or nothing
//   for (const auto& scenario : store.Scenarios()) store.Runs(scenario.id);
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/content_digest.h"
#include "db/content_ids.h"
#include "db/db_error.h"
#include "db/merge.h"
#include "db/records.h"
#include "db/verify.h"

namespace dv::db {

class SqliteHandle;

// How long a writer waits for another process's write lock unless StoreOptions says otherwise.
inline constexpr std::chrono::milliseconds kDefaultLockTimeout{10000};

struct StoreOptions {
  // Upper bound on every wait for another connection's lock; past it the call throws DbError
  // "database is locked".
  std::chrono::milliseconds lock_timeout = kDefaultLockTimeout;
  // OpenReadOnly runs VerifyContentOf (verify.h) before returning, so that every reader refuses
  // a tampered or inconsistent file; false only for tools that inspect broken files.
  bool verify = true;
};

// One open result DB. Move-only; not thread-safe (one per thread). Several processes may write
// one file at the same time: each RecordRun is one IMMEDIATE transaction in WAL mode.
class RunStore {
 public:
  // Opens `path` for reading and writing, creating it when missing (":memory:" gives a private
  // in-memory DB), in WAL mode, migrated to the newest schema. Refuses, without writing to it, a
  // file that is not SQLite, is corrupt, belongs to another application or has a newer schema.
  static RunStore Open(const std::string& path, const StoreOptions& options = {});
  // Opens an existing DB without ever writing to it (reports, gate): a missing file is an error,
  // an older schema is migrated in a private in-memory copy; the content is verified (verify.h)
  // unless options.verify is false. RecordRun/AddAttestation throw.
  static RunStore OpenReadOnly(const std::string& path, const StoreOptions& options = {});

  ~RunStore();
  RunStore(RunStore&& other) noexcept;
  RunStore& operator=(RunStore&& other) noexcept;

  // Validates `run` (records.h), then writes it, its steps and the rows it refers to in one
  // transaction; returns ComputeRunId(run). Recording the same content again is a no-op. Throws
  // DbError for an invalid run, a conflicting artifact row (same id, other source or config), or
  // no write lock within the lock timeout; the DB is then unchanged.
  std::string RecordRun(const RunRecord& run);
  // Stores a signed envelope; returns its id. The same envelope again is a no-op; the same
  // envelope with another signer_hint or created_at throws DbError (conflicting duplicate).
  std::string AddAttestation(const AttestationRecord& attestation);

  // Every scenario, ordered by name, then id.
  std::vector<ScenarioRecord> Scenarios() const;
  // The runs of one scenario (empty for an unknown id), ordered by configuration, machine id,
  // started_at, id; each with its nested records and, if asked, its steps.
  std::vector<RunRecord> Runs(const std::string& scenario_id,
                              StepLoading steps = StepLoading::kWithoutSteps) const;
  // One run, or nullopt when there is none with this id.
  std::optional<RunRecord> Run(const std::string& run_id,
                               StepLoading steps = StepLoading::kWithSteps) const;
  // The steps of one run, ordered by step (empty for an unknown id).
  std::vector<StepRecord> Steps(const std::string& run_id) const;
  // Every machine, ordered by id.
  std::vector<MachineRecord> Machines() const;
  // One machine, or nullopt.
  std::optional<MachineRecord> Machine(const std::string& machine_id) const;
  // Every artifact, ordered by id.
  std::vector<ArtifactRecord> Artifacts() const;
  // One artifact, or nullopt.
  std::optional<ArtifactRecord> Artifact(const std::string& artifact_id) const;
  // Every attestation, ordered by created_at, then id.
  std::vector<AttestationRecord> Attestations() const;

  // ContentDigest (content_digest.h) of this DB's current content.
  std::string ContentDigest(DigestScope scope = DigestScope::kAll) const;
  // PRAGMA user_version: the number of the last migration applied.
  int SchemaVersion() const;
  // The path this store was opened with.
  const std::string& Path() const;
  // True for a store from OpenReadOnly.
  bool ReadOnly() const { return read_only_; }

 private:
  RunStore(std::unique_ptr<SqliteHandle> handle, bool read_only);

  std::unique_ptr<SqliteHandle> handle_;
  bool read_only_ = false;
};

}  // namespace dv::db
