// Content-addressed ids: lowercase hex SHA-256 (OpenSSL EVP) of canonical content. Canonical JSON
// is nlohmann::json's dump() without indentation: keys sorted, no whitespace, UTF-8 as is.
#pragma once

#include <string>
#include <string_view>

#include "base/canonical_json.h"  // IsCanonicalJson
#include "base/sha256.h"          // Sha256Hex, IsSha256Hex
#include "db/records.h"

namespace dv::db {

// sha256(machine.fingerprint_json).
std::string ComputeMachineId(const MachineRecord& machine);
// sha256(scenario.canonical_text).
std::string ComputeScenarioId(const ScenarioRecord& scenario);
// sha256(attestation.envelope_json).
std::string ComputeAttestationId(const AttestationRecord& attestation);

// The canonical JSON a run id hashes: an object with artifact_id, backend, config_json (as a
// string), configuration, engine, final_logits_chain and final_token_chain (each left out when
// absent), machine_id, n_steps, scenario_id, spec_version, started_at, status, status_detail,
// steps (an array of {logits_chain, step, token_chain, token_id}), tokens_per_s_milli,
// tool_version, wall_ms, wrap_events. The nested records enter only through their ids (machine
// and scenario ids computed from their content). Throws DbError on text that is not UTF-8.
std::string CanonicalRunJson(const RunRecord& run);
// sha256(CanonicalRunJson(run)).
std::string ComputeRunId(const RunRecord& run);

}  // namespace dv::db
