#include "db/table_rows.h"

#include "base/sha256.h"
#include "db/db_error.h"

namespace dv::db {
namespace {

MachineRecord ReadMachine(const Statement& row, int first) {
  return MachineRecord{row.ColumnText(first), row.ColumnText(first + 1)};
}

ArtifactRecord ReadArtifact(const Statement& row, int first) {
  return ArtifactRecord{row.ColumnText(first), row.ColumnText(first + 1),
                        row.ColumnInt(first + 2) != 0, row.ColumnText(first + 3)};
}

ScenarioRecord ReadScenario(const Statement& row, int first) {
  return ScenarioRecord{row.ColumnText(first), row.ColumnText(first + 1),
                        row.ColumnText(first + 2)};
}

AttestationRecord ReadAttestation(const Statement& row, int first) {
  return AttestationRecord{row.ColumnText(first), row.ColumnText(first + 1),
                           row.ColumnText(first + 2), row.ColumnText(first + 3)};
}

constexpr const char* kMachineColumns = "id, fingerprint_json";
constexpr const char* kArtifactColumns = "id, source, synthetic, config_sha256";
constexpr const char* kScenarioColumns = "id, name, canonical_text";
constexpr const char* kAttestationColumns = "id, envelope_json, signer_hint, created_at";

// Runs joined with the rows they refer to; LEFT JOINs so that a dangling reference is reported
// rather than silently dropping the run.
constexpr const char* kRunSelect =
    "SELECT r.id, r.configuration, r.engine, r.backend, r.status, r.status_detail, "
    "r.started_at, r.wall_ms, r.tokens_per_s_milli, r.n_steps, r.final_logits_chain, "
    "r.final_token_chain, r.wrap_events, r.tool_version, r.spec_version, r.config_json, "
    "r.scenario_id, r.machine_id, r.artifact_id, "
    "s.id, s.name, s.canonical_text, m.id, m.fingerprint_json, "
    "a.id, a.source, a.synthetic, a.config_sha256 "
    "FROM runs r LEFT JOIN scenarios s ON s.id = r.scenario_id "
    "LEFT JOIN machines m ON m.id = r.machine_id LEFT JOIN artifacts a ON a.id = r.artifact_id ";

// An engine, backend or status column: one of base/run_kinds.h's spellings, or the row is refused.
template <typename E>
E ReadKind(const SqliteHandle& handle, const Statement& row, int column,
           const std::string& run_id) {
  const std::string text = row.ColumnText(column);
  const std::optional<E> value = ParseKind<E>(text);
  if (!value) {
    throw DbError(handle.Path() + ": run " + run_id + " has " +
                  std::string(KindSpellings<E>::kWhat) + " '" + text + "', not one of " +
                  KindList<E>(", ") + " (written by another detverify?)");
  }
  return *value;
}

RunRecord ReadRun(const SqliteHandle& handle, const Statement& row, StepLoading steps) {
  RunRecord run;
  run.id = row.ColumnText(0);
  run.configuration = row.ColumnText(1);
  run.engine = ReadKind<EngineKind>(handle, row, 2, run.id);
  run.backend = ReadKind<BackendKind>(handle, row, 3, run.id);
  run.status = ReadKind<RunStatus>(handle, row, 4, run.id);
  run.status_detail = row.ColumnText(5);
  run.started_at = row.ColumnText(6);
  run.wall_ms = row.ColumnInt(7);
  run.tokens_per_s_milli = row.ColumnInt(8);
  run.n_steps = row.ColumnInt(9);
  run.final_logits_chain = row.ColumnOptionalText(10);
  run.final_token_chain = row.ColumnOptionalText(11);
  run.wrap_events = row.ColumnInt(12);
  run.tool_version = row.ColumnText(13);
  run.spec_version = row.ColumnText(14);
  run.config_json = row.ColumnText(15);
  struct Reference {
    int id_column;      // the runs column holding the id
    int joined_column;  // the joined table's id column, NULL when the row is missing
    const char* table;
  };
  for (const Reference& reference : {Reference{16, 19, "scenario"}, Reference{17, 22, "machine"},
                                     Reference{18, 24, "artifact"}}) {
    if (!row.ColumnOptionalText(reference.joined_column)) {
      throw DbError(handle.Path() + ": run " + run.id + " refers to " + reference.table + " " +
                    row.ColumnText(reference.id_column) + ", which is not in the database");
    }
  }
  run.scenario = ReadScenario(row, 19);
  run.machine = ReadMachine(row, 22);
  run.artifact = ReadArtifact(row, 24);
  if (steps == StepLoading::kWithSteps) {
    run.steps = ListSteps(handle, run.id);
    run.step0_logits = FindFloatLogits(handle, run.id);
  }
  return run;
}

// Insert `insert` unless a row with the same id exists; an existing row is compared with the
// record. (A plain INSERT after the lookup, not INSERT OR IGNORE, so that a CHECK failure is an
// error rather than a silently skipped row.)
template <typename Record, typename Find, typename Insert>
PutResult Put(const SqliteHandle& handle, const Record& record, Find find, Insert insert) {
  if (std::optional<Record> existing = find(handle, record.id)) {
    return *existing == record ? PutResult::kAlreadyPresent : PutResult::kConflict;
  }
  insert();
  return PutResult::kInserted;
}

template <typename Record, typename Read>
std::vector<Record> ListAll(const SqliteHandle& handle, const std::string& sql, Read read) {
  Statement statement = handle.Prepare(sql);
  std::vector<Record> records;
  while (statement.Step()) records.push_back(read(statement, 0));
  return records;
}

template <typename Record, typename Read>
std::optional<Record> FindOne(const SqliteHandle& handle, const std::string& sql,
                              const std::string& id, Read read) {
  Statement statement = handle.Prepare(sql);
  statement.Bind(1, id);
  if (!statement.Step()) return std::nullopt;
  return read(statement, 0);
}

}  // namespace

PutResult PutMachine(const SqliteHandle& handle, const MachineRecord& machine) {
  return Put(handle, machine, FindMachine, [&] {
    handle.Prepare("INSERT INTO machines (id, fingerprint_json) VALUES (?1, ?2)")
        .Bind(1, machine.id)
        .Bind(2, machine.fingerprint_json)
        .Run();
  });
}

PutResult PutArtifact(const SqliteHandle& handle, const ArtifactRecord& artifact) {
  return Put(handle, artifact, FindArtifact, [&] {
    handle
        .Prepare(
            "INSERT INTO artifacts (id, source, synthetic, config_sha256) "
            "VALUES (?1, ?2, ?3, ?4)")
        .Bind(1, artifact.id)
        .Bind(2, artifact.source)
        .Bind(3, int64_t{artifact.synthetic ? 1 : 0})
        .Bind(4, artifact.config_sha256)
        .Run();
  });
}

PutResult PutScenario(const SqliteHandle& handle, const ScenarioRecord& scenario) {
  return Put(handle, scenario, FindScenario, [&] {
    handle.Prepare("INSERT INTO scenarios (id, name, canonical_text) VALUES (?1, ?2, ?3)")
        .Bind(1, scenario.id)
        .Bind(2, scenario.name)
        .Bind(3, scenario.canonical_text)
        .Run();
  });
}

PutResult PutRunRow(const SqliteHandle& handle, const RunRecord& run) {
  RunRecord row = run;
  row.steps.clear();
  const auto find = [](const SqliteHandle& h, const std::string& id) {
    return FindRun(h, id, StepLoading::kWithoutSteps);
  };
  return Put(handle, row, find, [&] {
    handle
        .Prepare(
            "INSERT INTO runs (id, scenario_id, machine_id, artifact_id, configuration, engine, "
            "backend, status, status_detail, started_at, wall_ms, tokens_per_s_milli, n_steps, "
            "final_logits_chain, final_token_chain, wrap_events, tool_version, spec_version, "
            "config_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
            "?15, ?16, ?17, ?18, ?19)")
        .Bind(1, run.id)
        .Bind(2, run.scenario.id)
        .Bind(3, run.machine.id)
        .Bind(4, run.artifact.id)
        .Bind(5, run.configuration)
        .Bind(6, std::string(KindName(run.engine)))
        .Bind(7, std::string(KindName(run.backend)))
        .Bind(8, std::string(KindName(run.status)))
        .Bind(9, run.status_detail)
        .Bind(10, run.started_at)
        .Bind(11, run.wall_ms)
        .Bind(12, run.tokens_per_s_milli)
        .Bind(13, run.n_steps)
        .Bind(14, run.final_logits_chain)
        .Bind(15, run.final_token_chain)
        .Bind(16, run.wrap_events)
        .Bind(17, run.tool_version)
        .Bind(18, run.spec_version)
        .Bind(19, run.config_json)
        .Run();
  });
}

void PutSteps(const SqliteHandle& handle, const std::string& run_id,
              const std::vector<StepRecord>& steps) {
  Statement insert = handle.Prepare(
      "INSERT INTO steps (run_id, step, token_id, logits_chain, token_chain) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  for (const StepRecord& step : steps) {
    insert.Reset();
    insert.Bind(1, run_id)
        .Bind(2, step.step)
        .Bind(3, step.token_id)
        .Bind(4, step.logits_chain)
        .Bind(5, step.token_chain)
        .Run();
  }
}

PutResult PutAttestation(const SqliteHandle& handle, const AttestationRecord& attestation) {
  return Put(handle, attestation, FindAttestation, [&] {
    handle
        .Prepare(
            "INSERT INTO attestations (id, envelope_json, signer_hint, created_at) "
            "VALUES (?1, ?2, ?3, ?4)")
        .Bind(1, attestation.id)
        .Bind(2, attestation.envelope_json)
        .Bind(3, attestation.signer_hint)
        .Bind(4, attestation.created_at)
        .Run();
  });
}

std::vector<MachineRecord> ListMachines(const SqliteHandle& handle) {
  return ListAll<MachineRecord>(
      handle, std::string("SELECT ") + kMachineColumns + " FROM machines ORDER BY id", ReadMachine);
}

std::optional<MachineRecord> FindMachine(const SqliteHandle& handle, const std::string& id) {
  return FindOne<MachineRecord>(
      handle, std::string("SELECT ") + kMachineColumns + " FROM machines WHERE id = ?1", id,
      ReadMachine);
}

std::vector<ArtifactRecord> ListArtifacts(const SqliteHandle& handle) {
  return ListAll<ArtifactRecord>(
      handle, std::string("SELECT ") + kArtifactColumns + " FROM artifacts ORDER BY id",
      ReadArtifact);
}

std::optional<ArtifactRecord> FindArtifact(const SqliteHandle& handle, const std::string& id) {
  return FindOne<ArtifactRecord>(
      handle, std::string("SELECT ") + kArtifactColumns + " FROM artifacts WHERE id = ?1", id,
      ReadArtifact);
}

std::vector<ScenarioRecord> ListScenarios(const SqliteHandle& handle) {
  return ListAll<ScenarioRecord>(
      handle, std::string("SELECT ") + kScenarioColumns + " FROM scenarios ORDER BY name, id",
      ReadScenario);
}

std::optional<ScenarioRecord> FindScenario(const SqliteHandle& handle, const std::string& id) {
  return FindOne<ScenarioRecord>(
      handle, std::string("SELECT ") + kScenarioColumns + " FROM scenarios WHERE id = ?1", id,
      ReadScenario);
}

std::vector<AttestationRecord> ListAttestations(const SqliteHandle& handle) {
  return ListAll<AttestationRecord>(
      handle,
      std::string("SELECT ") + kAttestationColumns + " FROM attestations ORDER BY created_at, id",
      ReadAttestation);
}

std::optional<AttestationRecord> FindAttestation(const SqliteHandle& handle,
                                                 const std::string& id) {
  return FindOne<AttestationRecord>(
      handle, std::string("SELECT ") + kAttestationColumns + " FROM attestations WHERE id = ?1", id,
      ReadAttestation);
}

std::vector<std::string> ListRunIds(const SqliteHandle& handle) {
  Statement statement = handle.Prepare("SELECT id FROM runs ORDER BY id");
  std::vector<std::string> ids;
  while (statement.Step()) ids.push_back(statement.ColumnText(0));
  return ids;
}

std::vector<RunRecord> ListRuns(const SqliteHandle& handle, const std::string& scenario_id,
                                StepLoading steps) {
  Statement statement = handle.Prepare(
      std::string(kRunSelect) +
      "WHERE r.scenario_id = ?1 ORDER BY r.configuration, r.machine_id, r.started_at, r.id");
  statement.Bind(1, scenario_id);
  std::vector<RunRecord> runs;
  while (statement.Step()) runs.push_back(ReadRun(handle, statement, steps));
  return runs;
}

std::optional<RunRecord> FindRun(const SqliteHandle& handle, const std::string& id,
                                 StepLoading steps) {
  Statement statement = handle.Prepare(std::string(kRunSelect) + "WHERE r.id = ?1");
  statement.Bind(1, id);
  if (!statement.Step()) return std::nullopt;
  return ReadRun(handle, statement, steps);
}

void PutFloatLogits(const SqliteHandle& handle, const std::string& run_id,
                    const std::vector<uint8_t>& logits) {
  if (logits.empty()) return;
  handle
      .Prepare(
          "INSERT INTO float_logits (run_id, step, vocab, logits, sha256) "
          "VALUES (?1, 0, ?2, ?3, ?4)")
      .Bind(1, run_id)
      .Bind(2, static_cast<int64_t>(logits.size() / 4))
      .BindBlob(3, logits)
      .Bind(4, Sha256Hex(logits))
      .Run();
}

std::vector<uint8_t> FindFloatLogits(const SqliteHandle& handle, const std::string& run_id) {
  Statement query = handle.Prepare("SELECT logits, sha256 FROM float_logits WHERE run_id = ?1");
  query.Bind(1, run_id);
  if (!query.Step()) return {};
  std::vector<uint8_t> logits = query.ColumnBlob(0);
  if (Sha256Hex(logits) != query.ColumnText(1)) {
    throw DbError(handle.Path() + ": the float logits of run " + run_id +
                  " do not match their sha256 (the DB was altered)");
  }
  return logits;
}

std::vector<StepRecord> ListSteps(const SqliteHandle& handle, const std::string& run_id) {
  Statement statement = handle.Prepare(
      "SELECT step, token_id, logits_chain, token_chain FROM steps WHERE run_id = ?1 "
      "ORDER BY step");
  statement.Bind(1, run_id);
  std::vector<StepRecord> steps;
  while (statement.Step()) {
    steps.push_back(StepRecord{statement.ColumnInt(0), statement.ColumnInt(1),
                               statement.ColumnText(2), statement.ColumnText(3)});
  }
  return steps;
}

}  // namespace dv::db
