// The write-side rules of records.h. The same checks run on every row a merge reads, so a
// tampered or foreign input is refused rather than copied.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "base/hash_chain.h"
#include "db/content_ids.h"
#include "db/db_error.h"
#include "db/records.h"

namespace dv::db {
namespace {

void Require(bool ok, const std::string& what, const std::string& problem) {
  if (!ok) throw DbError("invalid " + what + ": " + problem);
}

void RequireHex(const std::string& value, const std::string& what, const std::string& field) {
  Require(IsSha256Hex(value), what, field + " '" + value + "' is not 64 lowercase hex digits");
}

void RequireNonEmpty(const std::string& value, const std::string& what, const std::string& field) {
  Require(!value.empty(), what, field + " is empty");
}

void RequireId(const std::string& given, const std::string& computed, const std::string& what) {
  Require(given.empty() || given == computed, what,
          "id " + given + " does not match its content (" + computed + ")");
}

}  // namespace

void ValidateMachine(const MachineRecord& machine) {
  Require(IsCanonicalJson(machine.fingerprint_json), "machine",
          "fingerprint_json is not canonical JSON without floating-point numbers");
  RequireId(machine.id, ComputeMachineId(machine), "machine");
}

void ValidateArtifact(const ArtifactRecord& artifact) {
  RequireHex(artifact.id, "artifact", "id");
  RequireNonEmpty(artifact.source, "artifact " + artifact.id, "source");
  RequireHex(artifact.config_sha256, "artifact " + artifact.id, "config_sha256");
}

void ValidateScenario(const ScenarioRecord& scenario) {
  RequireNonEmpty(scenario.name, "scenario", "name");
  RequireNonEmpty(scenario.canonical_text, "scenario '" + scenario.name + "'", "canonical_text");
  RequireId(scenario.id, ComputeScenarioId(scenario), "scenario '" + scenario.name + "'");
}

void ValidateRun(const RunRecord& run) {
  ValidateScenario(run.scenario);
  ValidateMachine(run.machine);
  ValidateArtifact(run.artifact);
  const std::string what = "run '" + run.configuration + "'";
  RequireNonEmpty(run.configuration, "run", "configuration");
  // engine, backend and status are enums (base/run_kinds.h): only their values can be written.
  Require(static_cast<size_t>(run.engine) < KindSpellings<EngineKind>::kNames.size(), what,
          "engine out of range");
  Require(static_cast<size_t>(run.backend) < KindSpellings<BackendKind>::kNames.size(), what,
          "backend out of range");
  Require(static_cast<size_t>(run.status) < KindSpellings<RunStatus>::kNames.size(), what,
          "status out of range");
  RequireNonEmpty(run.started_at, what, "started_at");
  Require(run.wall_ms >= 0, what, "wall_ms is negative");
  Require(run.tokens_per_s_milli >= 0, what, "tokens_per_s_milli is negative");
  Require(run.wrap_events >= 0, what, "wrap_events is negative");
  RequireNonEmpty(run.tool_version, what, "tool_version");
  RequireNonEmpty(run.spec_version, what, "spec_version");
  Require(IsCanonicalJson(run.config_json), what,
          "config_json is not canonical JSON without floating-point numbers");
  Require(run.n_steps == static_cast<int64_t>(run.steps.size()), what,
          "n_steps " + std::to_string(run.n_steps) + " but " + std::to_string(run.steps.size()) +
              " steps");
  for (size_t i = 0; i < run.steps.size(); ++i) {
    const StepRecord& step = run.steps[i];
    Require(step.step == static_cast<int64_t>(i), what,
            "step " + std::to_string(step.step) + " at position " + std::to_string(i));
    Require(step.token_id >= 0, what, "step " + std::to_string(i) + " has a negative token id");
    RequireHex(step.logits_chain, what, "step " + std::to_string(i) + " logits_chain");
    RequireHex(step.token_chain, what, "step " + std::to_string(i) + " token_chain");
  }
  if (!run.steps.empty()) {
    Require(run.final_logits_chain == run.steps.back().logits_chain, what,
            "final_logits_chain is not the last step's logits_chain");
    Require(run.final_token_chain == run.steps.back().token_chain, what,
            "final_token_chain is not the last step's token_chain");
  } else {
    if (run.final_logits_chain) RequireHex(*run.final_logits_chain, what, "final_logits_chain");
    if (run.final_token_chain) RequireHex(*run.final_token_chain, what, "final_token_chain");
  }
  if (!run.step0_logits.empty()) {
    Require(run.engine == EngineKind::kFloat, what, "float logits on an int8 run");
    Require(!run.steps.empty(), what, "float logits on a run without steps");
    Require(run.step0_logits.size() % 4 == 0, what, "float logits not a whole number of float32");
    // The demo chain's first link (base/hash_chain.h, docs/SPEC.md §7): the stored logits must
    // be the very bytes step 0's logits chain hashed.
    if (!run.steps.empty()) {
      HashChain chain;
      chain.Update(run.step0_logits);
      Require(chain.Hex() == run.steps.front().logits_chain, what,
              "float logits that do not hash to step 0's logits_chain");
    }
  }
  RequireId(run.id, ComputeRunId(run), what);
}

void ValidateAttestation(const AttestationRecord& attestation) {
  Require(nlohmann::json::accept(attestation.envelope_json), "attestation",
          "envelope_json is not JSON");
  RequireNonEmpty(attestation.created_at, "attestation", "created_at");
  RequireId(attestation.id, ComputeAttestationId(attestation), "attestation");
}

}  // namespace dv::db
