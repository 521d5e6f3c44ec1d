// Typed reads and writes of each table's rows on an open connection (internal to db/). None of
// these opens a transaction: callers (RunStore, MergeDatabases) hold one around them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "db/records.h"
#include "db/sqlite_handle.h"

namespace dv::db {

// What a Put did: the row was new, an equal row was already there, or a row with the same id
// but different content was there (nothing written).
enum class PutResult { kInserted, kAlreadyPresent, kConflict };

// Each record must be valid (records.h) with every id filled in.
PutResult PutMachine(const SqliteHandle& handle, const MachineRecord& machine);
PutResult PutArtifact(const SqliteHandle& handle, const ArtifactRecord& artifact);
PutResult PutScenario(const SqliteHandle& handle, const ScenarioRecord& scenario);
// The runs row only; its scenario, machine and artifact rows must exist.
PutResult PutRunRow(const SqliteHandle& handle, const RunRecord& run);
// Inserts every step of run `run_id`.
void PutSteps(const SqliteHandle& handle, const std::string& run_id,
              const std::vector<StepRecord>& steps);
// Inserts run `run_id`'s step-0 float logits (little-endian float32 bytes); nothing when empty.
void PutFloatLogits(const SqliteHandle& handle, const std::string& run_id,
                    const std::vector<uint8_t>& logits);
PutResult PutAttestation(const SqliteHandle& handle, const AttestationRecord& attestation);

// Lists are ordered by id unless said otherwise.
std::vector<MachineRecord> ListMachines(const SqliteHandle& handle);
std::optional<MachineRecord> FindMachine(const SqliteHandle& handle, const std::string& id);
std::vector<ArtifactRecord> ListArtifacts(const SqliteHandle& handle);
std::optional<ArtifactRecord> FindArtifact(const SqliteHandle& handle, const std::string& id);
// Ordered by name, then id.
std::vector<ScenarioRecord> ListScenarios(const SqliteHandle& handle);
std::optional<ScenarioRecord> FindScenario(const SqliteHandle& handle, const std::string& id);
// Ordered by created_at, then id.
std::vector<AttestationRecord> ListAttestations(const SqliteHandle& handle);
std::optional<AttestationRecord> FindAttestation(const SqliteHandle& handle, const std::string& id);
std::vector<std::string> ListRunIds(const SqliteHandle& handle);
// The runs of one scenario with their nested records, ordered by configuration, machine id,
// started_at, id. Throws DbError when a run refers to a row that is missing.
std::vector<RunRecord> ListRuns(const SqliteHandle& handle, const std::string& scenario_id,
                                StepLoading steps);
std::optional<RunRecord> FindRun(const SqliteHandle& handle, const std::string& id,
                                 StepLoading steps);
// Ordered by step.
std::vector<StepRecord> ListSteps(const SqliteHandle& handle, const std::string& run_id);
// Run `run_id`'s step-0 float logits; empty when it has none.
std::vector<uint8_t> FindFloatLogits(const SqliteHandle& handle, const std::string& run_id);

}  // namespace dv::db
