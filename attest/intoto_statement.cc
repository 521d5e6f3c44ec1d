#include "attest/intoto_statement.h"

#include <algorithm>
#include <tuple>

#include "attest/attest_error.h"
#include "base/sha256.h"

namespace dv::attest {
namespace {

// Values quoted in a mismatch message are cut so the message stays one readable line.
constexpr size_t kMaxQuotedChars = 80;

nlohmann::json SubjectJson(const SubjectDigest& subject, const char* role) {
  if (!IsSha256Hex(subject.sha256)) {
    throw AttestError(std::string("statement: ") + role + " subject '" + subject.name +
                      "' has sha256 '" + subject.sha256 + "', expected 64 lowercase hex digits");
  }
  return {{"name", subject.name}, {"digest", {{"sha256", subject.sha256}}}};
}

std::string Quote(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > kMaxQuotedChars) text = text.substr(0, kMaxQuotedChars) + "...";
  return text;
}

// Subjects are a set in in-toto; order them so that comparison ignores the producer's order.
nlohmann::json WithSortedSubjects(nlohmann::json statement) {
  if (statement.is_object() && statement.contains("subject") && statement["subject"].is_array()) {
    auto& subjects = statement["subject"];
    std::sort(subjects.begin(), subjects.end(),
              [](const nlohmann::json& a, const nlohmann::json& b) { return a.dump() < b.dump(); });
  }
  return statement;
}

}  // namespace

nlohmann::json BuildStatement(const AttestationInput& input) {
  std::vector<MachineEntry> machines = input.machines;
  std::sort(machines.begin(), machines.end(), [](const MachineEntry& a, const MachineEntry& b) {
    return a.machine_id < b.machine_id;
  });
  std::vector<ConfigurationHashes> configurations = input.configurations;
  std::sort(configurations.begin(), configurations.end(),
            [](const ConfigurationHashes& a, const ConfigurationHashes& b) {
              return std::tie(a.configuration, a.machine_id, a.engine, a.backend) <
                     std::tie(b.configuration, b.machine_id, b.engine, b.backend);
            });

  nlohmann::json machines_json = nlohmann::json::array();
  for (const MachineEntry& machine : machines) {
    machines_json.push_back(
        {{"machine_id", machine.machine_id}, {"fingerprint", machine.fingerprint}});
  }
  nlohmann::json configurations_json = nlohmann::json::array();
  for (const ConfigurationHashes& c : configurations) {
    configurations_json.push_back({{"configuration", c.configuration},
                                   {"engine", c.engine},
                                   {"backend", c.backend},
                                   {"machine_id", c.machine_id},
                                   {"status", c.status},
                                   {"final_logits_chain", c.final_logits_chain},
                                   {"final_token_chain", c.final_token_chain},
                                   {"n_steps", c.n_steps}});
  }

  nlohmann::json predicate = {
      {"scenario", {{"name", input.scenario_name}, {"id", input.scenario_id}}},
      {"machines", std::move(machines_json)},
      {"configurations", std::move(configurations_json)},
      {"verdict",
       {{"int8_unique_logits_hashes", input.verdict.int8_unique_logits_hashes},
        {"int8_unique_token_hashes", input.verdict.int8_unique_token_hashes},
        {"agree", input.verdict.agree}}},
      {"tool_version", input.tool_version},
      {"spec_version", input.spec_version},
  };
  return {
      {"_type", kStatementType},
      {"subject", nlohmann::json::array({SubjectJson(input.artifact, "artifact"),
                                         SubjectJson(input.results, "results")})},
      {"predicateType", kRunResultsPredicateType},
      {"predicate", std::move(predicate)},
  };
}

bool IsInTotoStatement(const nlohmann::json& statement, std::string* why) {
  auto fail = [why](const std::string& problem) {
    if (why != nullptr) *why = problem;
    return false;
  };
  if (!statement.is_object()) return fail("not a JSON object");
  const auto type = statement.find("_type");
  if (type == statement.end() || !type->is_string() || *type != kStatementType) {
    return fail(std::string("_type is not \"") + kStatementType + "\"");
  }
  const auto subjects = statement.find("subject");
  if (subjects == statement.end() || !subjects->is_array() || subjects->empty()) {
    return fail("subject is missing or empty");
  }
  for (size_t i = 0; i < subjects->size(); ++i) {
    const nlohmann::json& subject = (*subjects)[i];
    const std::string where = "subject[" + std::to_string(i) + "]";
    if (!subject.is_object()) return fail(where + " is not an object");
    if (subject.contains("name") && !subject["name"].is_string()) {
      return fail(where + ".name is not a string");
    }
    const auto digest = subject.find("digest");
    if (digest == subject.end() || !digest->is_object()) return fail(where + " has no digest");
    const auto sha256 = digest->find("sha256");
    if (sha256 == digest->end() || !sha256->is_string() ||
        !IsSha256Hex(sha256->get<std::string>())) {
      return fail(where + ".digest.sha256 is missing or not 64 lowercase hex digits");
    }
  }
  const auto predicate_type = statement.find("predicateType");
  if (predicate_type == statement.end() || !predicate_type->is_string() ||
      predicate_type->get<std::string>().empty()) {
    return fail("predicateType is missing");
  }
  const auto predicate = statement.find("predicate");
  if (predicate != statement.end() && !predicate->is_object()) {
    return fail("predicate is not an object");
  }
  return true;
}

bool StatementMatches(const nlohmann::json& statement, const nlohmann::json& expected_statement,
                      std::string* why) {
  const nlohmann::json found = WithSortedSubjects(statement);
  const nlohmann::json expected = WithSortedSubjects(expected_statement);
  // json::diff yields the operations turning `expected` into `found`; the first names the first
  // differing location in key order, which is what a person needs to look at.
  const nlohmann::json patch = nlohmann::json::diff(expected, found);
  if (patch.empty()) return true;
  if (why != nullptr) {
    const nlohmann::json& first = patch.front();
    const std::string path = first.value("path", std::string());
    const std::string op = first.value("op", std::string());
    const nlohmann::json::json_pointer pointer(path);
    const std::string shown_path = path.empty() ? "/" : path;
    if (op == "add") {
      *why = shown_path + ": unexpected " + Quote(first["value"]);
    } else if (op == "remove") {
      *why = shown_path + ": missing, expected " + Quote(expected.at(pointer));
    } else {
      *why = shown_path + ": found " + Quote(found.at(pointer)) + ", expected " +
             Quote(expected.at(pointer));
    }
    const size_t more = patch.size() - 1;
    if (more > 0) *why += " (and " + std::to_string(more) + " more difference(s))";
  }
  return false;
}

}  // namespace dv::attest
