#include "reports/gate.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
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

// The chain of `run` after `steps` steps, or "" when it has fewer.
std::pair<std::string, std::string> ChainsAfter(const db::RunRecord& run, int64_t steps) {
  if (steps < 1 || static_cast<size_t>(steps) > run.steps.size()) return {"", ""};
  const db::StepRecord& s = run.steps[static_cast<size_t>(steps - 1)];
  return {s.logits_chain, s.token_chain};
}

std::string Divergence(const verdict::ChainDivergence& d, const std::string& baseline) {
  std::string text;
  if (d.logits_step) {
    text = "logits chain leaves " + baseline + "'s at step " + std::to_string(*d.logits_step);
  } else {
    text = "logits chain equals " + baseline + "'s";
  }
  if (d.token_step) {
    text += "; tokens leave at step " + std::to_string(*d.token_step);
  } else {
    text += "; tokens agree";
  }
  return text;
}

ScenarioGate GateScenario(const ScenarioResults& s, const std::vector<ExpectEntry>* expect) {
  ScenarioGate g;
  g.label = s.label;
  g.steps = s.steps;
  if (s.baseline) g.baseline = s.row_names[*s.baseline];
  std::set<std::string> logits, tokens, artifacts;
  std::vector<std::string> skipped;
  int64_t float_rows = 0;
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const db::RunRecord& r = s.runs[i];
    GateCase c;
    c.name = s.row_names[i];
    c.configuration = r.configuration;
    c.device = s.table.rows[i].device;
    c.engine = r.engine;
    c.backend = r.backend;
    c.status = r.status;
    c.logits_chain = r.final_logits_chain.value_or("");
    c.token_chain = r.final_token_chain.value_or("");
    c.steps = r.n_steps;
    const std::string detail = r.status_detail.empty() ? "" : ": " + r.status_detail;
    if (r.engine != "int8") {
      c.outcome = CaseOutcome::kSkipped;
      c.message = "float contrast row (" + r.status + detail + "): reported, never gated";
      ++float_rows;
    } else if (r.status == "skipped") {
      c.outcome = CaseOutcome::kSkipped;
      c.message = "skipped" + detail;
      skipped.push_back(c.name + (r.status_detail.empty() ? "" : ": " + r.status_detail));
    } else if (r.status != "ok") {
      c.outcome = CaseOutcome::kFail;
      c.message = "produced no hash: " + r.status + detail;
    } else if (!r.final_logits_chain || !r.final_token_chain) {
      c.outcome = CaseOutcome::kFail;
      c.message = "status ok but no steps recorded";
    } else {
      ++g.int8_ok;
      logits.insert(*r.final_logits_chain);
      tokens.insert(*r.final_token_chain);
      artifacts.insert(r.artifact.id);
    }
    g.cases.push_back(std::move(c));
  }
  g.unique_logits = static_cast<int64_t>(logits.size());
  g.unique_tokens = static_cast<int64_t>(tokens.size());
  if (logits.size() == 1) g.logits_chain = *logits.begin();
  if (tokens.size() == 1) g.token_chain = *tokens.begin();
  if (artifacts.size() == 1) g.artifact = *artifacts.begin();

  if (g.int8_ok == 0) g.problems.push_back("no int8 configuration produced a hash");
  if (artifacts.size() > 1) {
    std::string list;
    for (const std::string& a : artifacts) list += (list.empty() ? "" : ", ") + ShortHash(a, 16);
    g.problems.push_back("the int8 runs used " + std::to_string(artifacts.size()) +
                         " different artifacts (" + list +
                         "): hashes are comparable only for one artifact");
  }

  // Disagreement: every int8 row outside the baseline row's pair of final chains fails, with the
  // step where it leaves the baseline's chains.
  if (g.Disagrees() && s.baseline) {
    const db::RunRecord& base = s.runs[*s.baseline];
    std::map<size_t, const verdict::ChainDivergence*> by_run;
    for (const RowComparison& c : s.comparisons) by_run[c.run] = &c.divergence;
    for (size_t i = 0; i < s.runs.size(); ++i) {
      const db::RunRecord& r = s.runs[i];
      GateCase& c = g.cases[i];
      if (c.outcome != CaseOutcome::kPass || r.engine != "int8") continue;
      if (r.final_logits_chain == base.final_logits_chain &&
          r.final_token_chain == base.final_token_chain) {
        continue;
      }
      c.outcome = CaseOutcome::kFail;
      const auto it = by_run.find(i);
      c.message = it != by_run.end() ? Divergence(*it->second, g.baseline)
                                     : "final chains differ from " + g.baseline + "'s";
    }
  }

  if (expect != nullptr) {
    std::vector<const ExpectEntry*> applicable;
    for (const ExpectEntry& e : *expect) {
      if (!e.scenario.empty() && e.scenario != s.scenario.name) continue;
      for (const std::string& a : s.artifact_ids) {
        if (a.rfind(e.hashes.artifact, 0) == 0) {
          applicable.push_back(&e);
          break;
        }
      }
    }
    if (applicable.empty() && g.int8_ok > 0) {
      std::string list;
      for (const std::string& a : s.artifact_ids)
        list += (list.empty() ? "" : ", ") + ShortHash(a, 16);
      g.problems.push_back("--expect has no entry for this scenario and artifact " + list);
    }
    for (const ExpectEntry* e : applicable) {
      for (size_t i = 0; i < s.runs.size(); ++i) {
        const db::RunRecord& r = s.runs[i];
        GateCase& c = g.cases[i];
        if (r.engine != "int8" || r.status != "ok" ||
            r.artifact.id.rfind(e->hashes.artifact, 0) != 0) {
          continue;
        }
        const auto [l, t] = ChainsAfter(r, e->hashes.steps);
        std::string why;
        if (l.empty()) {
          why = "has " + std::to_string(r.steps.size()) + " steps; --expect names step " +
                std::to_string(e->hashes.steps);
        } else if (l.rfind(e->hashes.logits, 0) != 0 || t.rfind(e->hashes.tokens, 0) != 0) {
          why = "after " + std::to_string(e->hashes.steps) + " steps: logits " +
                ShortHash(l, e->hashes.logits.size()) + " tokens " +
                ShortHash(t, e->hashes.tokens.size()) + ", --expect says logits " +
                e->hashes.logits + " tokens " + e->hashes.tokens;
        }
        if (why.empty()) continue;
        c.message = c.outcome == CaseOutcome::kFail ? c.message + "; " + why : why;
        c.outcome = CaseOutcome::kFail;
      }
    }
  }

  if (!skipped.empty()) {
    std::string list;
    for (const std::string& n : skipped) list += (list.empty() ? "" : "; ") + n;
    g.notes.push_back("skipped, not failing: " + list);
  }
  if (float_rows > 0) {
    g.notes.push_back(std::to_string(float_rows) +
                      (float_rows == 1 ? " float contrast row" : " float contrast rows") +
                      ": reported, never gated");
  }
  if (!s.table.expected_ok) {
    g.notes.push_back(
        "some int8 rows do not end on the scenario's published hashes (see `detverify report`); "
        "gate on them with --expect");
  }
  g.passed = g.problems.empty() &&
             std::none_of(g.cases.begin(), g.cases.end(),
                          [](const GateCase& c) { return c.outcome == CaseOutcome::kFail; });
  return g;
}

}  // namespace

std::vector<ExpectEntry> ParseExpect(const std::string& text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ReportError(source + ": not JSON (" + e.what() + ")");
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
