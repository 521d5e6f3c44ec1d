#include "reports/gate.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "base/strict_json.h"
#include "reports/report_error.h"

namespace dv::reports {
namespace {

constexpr size_t kMinPrefixDigits = 8;

std::string HexPrefix(const nlohmann::json& entry, const char* key, const std::string& where) {
  if (!entry.contains(key)) throw ReportError(where + ": missing \"" + key + "\"");
  if (!entry[key].is_string()) throw ReportError(where + ": \"" + key + "\" must be a string");
  std::string text = entry[key].get<std::string>();
  std::transform(text.begin(), text.end(), text.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  const bool hex = std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
  if (!hex || text.size() < kMinPrefixDigits || text.size() > 64) {
    throw ReportError(where + ": \"" + key + "\" must be 8 to 64 hex digits, got \"" +
                      entry[key].get<std::string>() + "\"");
  }
  return text;
}

ExpectEntry ParseEntry(const nlohmann::json& entry, const std::string& where) {
  if (!entry.is_object()) throw ReportError(where + ": an expectation must be a JSON object");
  static const std::set<std::string> kKeys = {"scenario", "artifact", "steps", "logits", "tokens"};
  for (const auto& item : entry.items()) {
    if (kKeys.count(item.key()) == 0) {
      throw ReportError(where + ": unknown key \"" + item.key() +
                        "\" (known: scenario, artifact, steps, logits, tokens)");
    }
  }
  ExpectEntry e;
  if (entry.contains("scenario")) {
    if (!entry["scenario"].is_string() || entry["scenario"].get<std::string>().empty()) {
      throw ReportError(where + ": \"scenario\" must be a non-empty string");
    }
    e.scenario = entry["scenario"].get<std::string>();
  }
  e.hashes.artifact = HexPrefix(entry, "artifact", where);
  if (!entry.contains("steps") || !entry["steps"].is_number_integer() ||
      entry["steps"].get<int64_t>() < 1) {
    throw ReportError(where + ": \"steps\" must be an integer >= 1");
  }
  e.hashes.steps = entry["steps"].get<int64_t>();
  e.hashes.logits = HexPrefix(entry, "logits", where);
  e.hashes.tokens = HexPrefix(entry, "tokens", where);
  return e;
}

// Stage 1: the scenario's verdict -- the one the fleet results carry, or, with --expect, judged
// again with the entries that name this scenario or none (verdict/verdict.h).
verdict::ScenarioVerdict JudgeWithExpectations(const ScenarioResults& s,
                                               const std::vector<ExpectEntry>* expect) {
  if (expect == nullptr) return s.verdict;
  std::vector<verdict::ExpectedHashes> mine;
  for (const ExpectEntry& e : *expect) {
    if (e.scenario.empty() || e.scenario == s.scenario.name) mine.push_back(e.hashes);
  }
  return verdict::JudgeScenario(s.runs, s.published, &mine);
}

// Stage 2: row `i` as a JUnit-shaped case, its outcome the verdict's.
GateCase CaseOf(const ScenarioResults& s, const verdict::ScenarioVerdict& v, size_t i) {
  const db::RunRecord& r = s.runs[i];
  const verdict::RowVerdict& row = v.rows[i];
  GateCase c;
  c.name = v.row_names[i];
  c.configuration = r.configuration;
  c.device = s.table.rows[i].device;
  c.engine = std::string(KindName(r.engine));
  c.backend = std::string(KindName(r.backend));
  c.status = std::string(KindName(r.status));
  c.logits_chain = r.final_logits_chain.value_or("");
  c.token_chain = r.final_token_chain.value_or("");
  c.steps = r.n_steps;
  c.message = row.message;
  c.outcome = row.failed ? CaseOutcome::kFail
              : row.outcome == verdict::RowOutcome::kSkipped ||
                      row.outcome == verdict::RowOutcome::kContrast
                  ? CaseOutcome::kSkipped
                  : CaseOutcome::kPass;
  return c;
}

// One scenario's gate: judged (stage 1), its rows as cases (stage 2), the verdict's summary.
ScenarioGate GateScenario(const ScenarioResults& s, const std::vector<ExpectEntry>* expect) {
  const verdict::ScenarioVerdict v = JudgeWithExpectations(s, expect);
  ScenarioGate g;
  g.label = s.label;
  g.steps = s.steps;
  if (v.baseline) g.baseline = v.row_names[*v.baseline];
  for (size_t i = 0; i < s.runs.size(); ++i) g.cases.push_back(CaseOf(s, v, i));
  g.problems = v.problems;
  g.notes = v.notes;
  g.int8_ok = v.int8_with_hashes;
  g.unique_logits = v.int8_unique_logits;
  g.unique_tokens = v.int8_unique_tokens;
  g.logits_chain = v.logits_chain;
  g.token_chain = v.token_chain;
  if (v.artifacts.size() == 1) g.artifact = v.artifacts.front();
  g.passed = v.passed;
  return g;
}

}  // namespace

std::vector<ExpectEntry> ParseExpect(const std::string& text, const std::string& source) {
  nlohmann::json doc;
  JsonProblem problem;
  if (!ParseJsonStrict(text, doc, problem)) {
    throw ReportError(source + ":" + std::to_string(problem.line) + ": " +
                      (problem.kind == JsonProblem::Kind::kMalformed
                           ? "not JSON (" + problem.message + ")"
                           : problem.message));
  }
  std::vector<ExpectEntry> out;
  if (doc.is_array()) {
    if (doc.empty()) throw ReportError(source + ": an empty list expects nothing");
    for (size_t i = 0; i < doc.size(); ++i) {
      out.push_back(ParseEntry(doc[i], source + ": entry " + std::to_string(i)));
    }
  } else {
    out.push_back(ParseEntry(doc, source));
  }
  return out;
}

std::vector<ExpectEntry> LoadExpectFile(const std::string& path) {
  std::string text, why;
  if (!ReadFileBounded(path, 16 * kMiB, text, why)) {
    throw ReportError(path + ": cannot read the --expect file (" + why + ")");
  }
  return ParseExpect(text, path);
}

GateResult EvaluateGate(const FleetResults& fleet, const GateOptions& options) {
  GateResult result;
  result.db_path = fleet.db_path;
  result.results_digest = fleet.results_digest;
  result.expect_given = options.expect != nullptr;
  if (fleet.scenarios.empty()) {
    result.problems.push_back(fleet.db_path + " holds no scenarios: nothing shows agreement");
  }
  for (const ScenarioResults& s : fleet.scenarios) {
    result.scenarios.push_back(GateScenario(s, options.expect));
  }
  if (options.expect != nullptr && !options.scenario_selected) {
    std::set<std::string> names;
    for (const ScenarioResults& s : fleet.scenarios) names.insert(s.scenario.name);
    for (const ExpectEntry& e : *options.expect) {
      if (!e.scenario.empty() && names.count(e.scenario) == 0) {
        result.problems.push_back("--expect names scenario '" + e.scenario + "', which " +
                                  fleet.db_path + " does not hold");
      }
    }
  }
  result.passed =
      result.problems.empty() && std::all_of(result.scenarios.begin(), result.scenarios.end(),
                                             [](const ScenarioGate& g) { return g.passed; });
  return result;
}

}  // namespace dv::reports
