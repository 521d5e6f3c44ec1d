// The rows of a detverify result DB as plain values (db/README.md has the schema). Ids are
// lowercase hex SHA-256 of canonical content; content_ids.h computes them. Hashed content holds
// integers and strings only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/run_kinds.h"

namespace dv::db {

// runs.engine, runs.backend and runs.status hold the spellings of base/run_kinds.h; a row with
// any other value is refused when read (DbError naming the run and the value).

// Whether a run read back carries its steps (they are most of a DB's bytes).
enum class StepLoading { kWithoutSteps, kWithSteps };

// One machine: its hardware/software fingerprint as canonical JSON (sorted keys, no whitespace,
// no floating-point numbers). id = sha256(fingerprint_json).
struct MachineRecord {
  std::string id;  // filled on read; on write empty or equal to ComputeMachineId(*this)
  std::string fingerprint_json;
  bool operator==(const MachineRecord&) const = default;
};

// One model artifact. id = sha256 of its model.safetensors, supplied by the caller. The row must
// be the same on every machine (a different source for the same id is a conflicting duplicate),
// so `source` names the artifact, not a machine's path: "artifact:qwen3-0.6b-int8",
// "synthetic:qwen3-0.6b seed=0".
struct ArtifactRecord {
  std::string id;  // 64 lowercase hex
  std::string source;
  bool synthetic = false;
  std::string config_sha256;  // 64 lowercase hex: sha256 of config.json
  bool operator==(const ArtifactRecord&) const = default;
};

// One scenario. id = sha256(canonical_text).
struct ScenarioRecord {
  std::string id;  // filled on read; on write empty or equal to ComputeScenarioId(*this)
  std::string name;
  std::string canonical_text;
  bool operator==(const ScenarioRecord&) const = default;
};

// One generated step of a run: the chain hashes after this step (64 lowercase hex each).
struct StepRecord {
  int64_t step = 0;  // 0 is the prompt's last position; steps of a run are 0, 1, ..., n_steps-1
  int64_t token_id = 0;
  std::string logits_chain;
  std::string token_chain;
  bool operator==(const StepRecord&) const = default;
};

// One execution of one configuration of a scenario on one machine, with the rows it refers to.
// id = sha256 of CanonicalRunJson(*this): every field below except the nested records' contents
// (they enter through their ids) and including the steps; step0_logits through its SHA-256,
// and only when present, so the ids of runs without them are those schema 1 gave.
struct RunRecord {
  std::string id;  // filled on read; on write empty or equal to ComputeRunId(*this)
  ScenarioRecord scenario;
  MachineRecord machine;
  ArtifactRecord artifact;
  std::string configuration;  // the configuration's name, e.g. "int8-cpu-b1"
  EngineKind engine = EngineKind::kInt8;
  BackendKind backend = BackendKind::kReference;
  RunStatus status = RunStatus::kOk;
  std::string status_detail;       // free text; empty when there is nothing to add
  std::string started_at;          // UTC ISO-8601, e.g. "2025-01-31T12:00:00Z"
  int64_t wall_ms = 0;             // >= 0
  int64_t tokens_per_s_milli = 0;  // tokens/s x 1000, >= 0
  int64_t n_steps = 0;             // == steps.size() on write; set on read even without steps
  std::optional<std::string> final_logits_chain;  // == steps.back().logits_chain when steps exist
  std::optional<std::string> final_token_chain;   // == steps.back().token_chain when steps exist
  int64_t wrap_events = 0;                        // diagnostic count, >= 0
  std::string tool_version;
  std::string spec_version;
  std::string config_json;        // canonical JSON of the configuration as run: the run plan
                                  // (plan/run_plan.h) for runs recorded by `detverify run`
  std::vector<StepRecord> steps;  // empty when read with StepLoading::kWithoutSteps
  // Float runs with steps: the step-0 logits as little-endian float32 bytes [vocab] (the
  // float_logits table), from which the float rows' cushion is computed. Empty for int8 runs,
  // for float runs without steps or recorded before schema 2, and when read without steps.
  std::vector<uint8_t> step0_logits;
  bool operator==(const RunRecord&) const = default;
};

// A signed statement kept with the results: each machine's own and the merger's.
// id = sha256(envelope_json); the same envelope with other metadata is a conflicting duplicate.
struct AttestationRecord {
  std::string id;  // filled on read; on write empty or equal to ComputeAttestationId(*this)
  std::string envelope_json;  // the DSSE envelope text, stored byte for byte
  std::string signer_hint;
  std::string created_at;  // UTC ISO-8601
  bool operator==(const AttestationRecord&) const = default;
};

// Each throws DbError("invalid <what>: <problem>") unless the record may be written: the rules
// in the comments above, ids (when given) equal to the computed ones, hex fields 64 lowercase hex,
// required strings non-empty, JSON fields canonical and free of floating-point numbers.
void ValidateMachine(const MachineRecord& machine);
void ValidateArtifact(const ArtifactRecord& artifact);
void ValidateScenario(const ScenarioRecord& scenario);
void ValidateRun(const RunRecord& run);  // also validates the nested records and every step
void ValidateAttestation(const AttestationRecord& attestation);

}  // namespace dv::db
