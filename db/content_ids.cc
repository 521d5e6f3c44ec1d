#include "db/content_ids.h"

#include <openssl/evp.h>

#include <array>
#include <memory>
#include <nlohmann/json.hpp>

#include "db/db_error.h"

namespace dv::db {
namespace {

using Json = nlohmann::json;

bool HoldsOnlyExactValues(const Json& value) {
  if (value.is_number_float()) return false;
  if (value.is_structured()) {
    for (const Json& child : value) {
      if (!HoldsOnlyExactValues(child)) return false;
    }
  }
  return true;
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                  &EVP_MD_CTX_free);
  std::array<unsigned char, 32> digest{};
  unsigned int length = 0;
  // SHA-256 through EVP cannot fail short of memory exhaustion; treat that as fatal.
  if (context == nullptr || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(context.get(), bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(context.get(), digest.data(), &length) != 1 || length != digest.size()) {
    throw std::bad_alloc();
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(64, '0');
  for (size_t i = 0; i < digest.size(); ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 0x0f];
  }
  return hex;
}

bool IsSha256Hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool IsCanonicalJson(std::string_view json_text) {
  Json value = Json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded() || !HoldsOnlyExactValues(value)) return false;
  try {
    return value.dump() == json_text;
  } catch (const Json::exception&) {  // invalid UTF-8 inside a string
    return false;
  }
}

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
      {"engine", run.engine},
      {"backend", run.backend},
      {"status", run.status},
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
  try {
    return object.dump();
  } catch (const Json::exception& error) {
    throw DbError(std::string("invalid run: text is not UTF-8 (") + error.what() + ")");
  }
}

std::string ComputeRunId(const RunRecord& run) { return Sha256Hex(CanonicalRunJson(run)); }

}  // namespace dv::db
