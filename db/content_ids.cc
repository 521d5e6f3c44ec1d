#include "db/content_ids.h"

#include <nlohmann/json.hpp>

#include "db/db_error.h"

namespace dv::db {
namespace {

using Json = nlohmann::json;

}  // namespace

std::string ComputeMachineId(const MachineRecord& machine) {
  return Sha256Hex(machine.fingerprint_json);
}

std::string ComputeScenarioId(const ScenarioRecord& scenario) {
  return Sha256Hex(scenario.canonical_text);
}

std::string ComputeAttestationId(const AttestationRecord& attestation) {
  return Sha256Hex(attestation.envelope_json);
}

std::string CanonicalRunJson(const RunRecord& run) {
  Json steps = Json::array();
  for (const StepRecord& step : run.steps) {
    steps.push_back(Json{{"step", step.step},
                         {"token_id", step.token_id},
                         {"logits_chain", step.logits_chain},
                         {"token_chain", step.token_chain}});
  }
  Json object = {
      {"scenario_id", ComputeScenarioId(run.scenario)},
      {"machine_id", ComputeMachineId(run.machine)},
      {"artifact_id", run.artifact.id},
      {"configuration", run.configuration},
      {"engine", KindName(run.engine)},
      {"backend", KindName(run.backend)},
      {"status", KindName(run.status)},
      {"status_detail", run.status_detail},
      {"started_at", run.started_at},
      {"wall_ms", run.wall_ms},
      {"tokens_per_s_milli", run.tokens_per_s_milli},
      {"n_steps", run.n_steps},
      {"wrap_events", run.wrap_events},
      {"tool_version", run.tool_version},
      {"spec_version", run.spec_version},
      {"config_json", run.config_json},
      {"steps", std::move(steps)},
  };
  // Absent chains are left out rather than written as null: hashed content is strings and
  // integers only.
  if (run.final_logits_chain) object["final_logits_chain"] = *run.final_logits_chain;
  if (run.final_token_chain) object["final_token_chain"] = *run.final_token_chain;
  if (!run.step0_logits.empty()) object["step0_logits_sha256"] = Sha256Hex(run.step0_logits);
  try {
    return object.dump();
  } catch (const Json::exception& error) {
    throw DbError(std::string("invalid run: text is not UTF-8 (") + error.what() + ")");
  }
}

std::string ComputeRunId(const RunRecord& run) { return Sha256Hex(CanonicalRunJson(run)); }

}  // namespace dv::db
