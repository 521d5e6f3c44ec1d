#include "verdict/verdict.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "fingerprint/fingerprint.h"

namespace dv::verdict {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool HasPrefix(const std::string& text, const std::string& prefix) {
  return Lower(text).rfind(Lower(prefix), 0) == 0;
}

// The machine's short CPU name as the run table shows it, without the "(cpu)" backend mark.
std::string CpuName(const db::MachineRecord& machine) {
  const nlohmann::json fp = nlohmann::json::parse(machine.fingerprint_json, nullptr, false);
  std::string label =
      fingerprint::DeviceLabel(fp.is_discarded() ? nlohmann::json::object() : fp, "cpu");
  const std::string mark = " (cpu)";
  if (label.size() > mark.size() && label.ends_with(mark)) label.resize(label.size() - mark.size());
  return label;
}

bool HasHashes(const db::RunRecord& r) {
  return r.status == RunStatus::kOk && r.final_logits_chain && r.final_token_chain;
}

// The chains of `run` after `steps` steps, or "" when it has fewer.
std::pair<std::string, std::string> ChainsAfter(const db::RunRecord& run, int64_t steps) {
  if (steps < 1 || static_cast<size_t>(steps) > run.steps.size()) return {"", ""};
  const db::StepRecord& s = run.steps[static_cast<size_t>(steps - 1)];
  return {s.logits_chain, s.token_chain};
}

// One expectation against one row: "" when it is met, else why not; `match` says how it went.
std::string Check(const db::RunRecord& r, const ExpectedHashes& e, HashMatch& match,
                  const char* what) {
  const auto [logits, tokens] = ChainsAfter(r, e.steps);
  if (logits.empty()) {
    if (match == HashMatch::kNone) match = HashMatch::kTooShort;
    return "has " + std::to_string(r.steps.size()) + " steps; " + what + " names step " +
           std::to_string(e.steps);
  }
  if (!HasPrefix(logits, e.logits) || !HasPrefix(tokens, e.tokens)) {
    match = HashMatch::kMismatch;
    return "after " + std::to_string(e.steps) + " steps: logits " +
           ShortHash(logits, e.logits.size()) + " tokens " + ShortHash(tokens, e.tokens.size()) +
           ", " + what + " says logits " + e.logits + " tokens " + e.tokens;
  }
  if (match != HashMatch::kMismatch) match = HashMatch::kMatch;
  return "";
}

std::string DivergenceText(const ChainDivergence& d, const std::string& baseline) {
  std::string text = d.logits_step ? "logits chain leaves " + baseline + "'s at step " +
                                         std::to_string(*d.logits_step)
                                   : "logits chain equals " + baseline + "'s";
  text +=
      d.token_step ? "; tokens leave at step " + std::to_string(*d.token_step) : "; tokens agree";
  return text;
}

std::string Detail(const db::RunRecord& r) {
  return r.status_detail.empty() ? "" : ": " + r.status_detail;
}

// The entries that name an artifact of `runs`.
std::vector<const ExpectedHashes*> Applicable(const std::vector<ExpectedHashes>& entries,
                                              const std::set<std::string>& artifacts) {
  std::vector<const ExpectedHashes*> out;
  for (const ExpectedHashes& e : entries) {
    for (const std::string& a : artifacts) {
      if (HasPrefix(a, e.artifact)) {
        out.push_back(&e);
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::string ShortHash(const std::string& hex, size_t digits) { return hex.substr(0, digits); }

size_t ScenarioVerdict::failures() const {
  return static_cast<size_t>(
      std::count_if(rows.begin(), rows.end(), [](const RowVerdict& r) { return r.failed; }));
}

std::vector<std::string> RowNames(const std::vector<db::RunRecord>& runs) {
  std::set<std::string> machines;
  for (const db::RunRecord& r : runs) machines.insert(r.machine.id);
  std::vector<std::string> names;
  std::map<std::string, int> seen;
  for (const db::RunRecord& r : runs) {
    std::string name = r.configuration;
    if (machines.size() > 1) name += " @ " + CpuName(r.machine) + " " + ShortHash(r.machine.id, 8);
    names.push_back(name);
    ++seen[name];
  }
  // The same configuration run twice on one machine: tell the runs apart by their ids.
  for (size_t i = 0; i < runs.size(); ++i) {
    if (seen[names[i]] > 1) names[i] += " (run " + ShortHash(runs[i].id, 8) + ")";
  }
  return names;
}

ScenarioVerdict JudgeScenario(const std::vector<db::RunRecord>& runs,
                              const std::vector<ExpectedHashes>& published,
                              const std::vector<ExpectedHashes>* expectations) {
  ScenarioVerdict v;
  v.rows.resize(runs.size());
  v.row_names = RowNames(runs);
  v.baseline = FindBaselineRun(runs);
  v.expectations_given = expectations != nullptr;

  // Each row on its own: what it is, whether it produced hashes.
  std::set<std::string> logits, tokens, artifacts, float_logits, all_artifacts;
  std::vector<std::string> skipped;
  int64_t float_rows = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const db::RunRecord& r = runs[i];
    RowVerdict& row = v.rows[i];
    all_artifacts.insert(r.artifact.id);
    v.steps = std::max(v.steps, r.n_steps);
    if (v.baseline && i != *v.baseline && !r.steps.empty()) {
      row.divergence = CompareChains(runs[*v.baseline].steps, r.steps);
    }
    const std::string status(KindName(r.status));
    if (r.engine != EngineKind::kInt8) {
      row.outcome = RowOutcome::kContrast;
      row.message = "float contrast row (" + status + Detail(r) + "): reported, never gated";
      ++float_rows;
      if (HasHashes(r)) {
        ++v.float_with_hashes;
        float_logits.insert(*r.final_logits_chain);
      }
    } else if (r.status == RunStatus::kSkipped) {
      row.outcome = RowOutcome::kSkipped;
      row.message = "skipped" + Detail(r);
      skipped.push_back(v.row_names[i] + Detail(r));
    } else if (r.status != RunStatus::kOk) {
      row.outcome = RowOutcome::kNoHash;
      row.failed = true;
      row.message = "produced no hash: " + status + Detail(r);
    } else if (!HasHashes(r)) {
      row.outcome = RowOutcome::kNoHash;
      row.failed = true;
      row.message = "status ok but no steps recorded";
    } else {
      row.outcome = RowOutcome::kAgrees;
      ++v.int8_with_hashes;
      logits.insert(*r.final_logits_chain);
      tokens.insert(*r.final_token_chain);
      artifacts.insert(r.artifact.id);
    }
  }
  v.int8_unique_logits = static_cast<int64_t>(logits.size());
  v.int8_unique_tokens = static_cast<int64_t>(tokens.size());
  if (logits.size() == 1) v.logits_chain = *logits.begin();
  if (tokens.size() == 1) v.token_chain = *tokens.begin();
  v.artifacts.assign(artifacts.begin(), artifacts.end());
  v.float_unique_logits = static_cast<int64_t>(float_logits.size());

  // The float rows against each other: measured, reported, never part of `agree` or `passed`.
  std::vector<float_contrast::FloatRow> float_inputs;
  std::vector<std::vector<std::string>> float_chains(2 * runs.size());
  std::vector<std::vector<float>> float_logits_values(runs.size());
  std::set<std::string> float_artifacts;
  for (size_t i = 0; i < runs.size(); ++i) {
    const db::RunRecord& r = runs[i];
    if (r.engine != EngineKind::kFloat || !HasHashes(r) || r.steps.empty()) continue;
    std::vector<std::string>& logits_chains = float_chains[2 * i];
    std::vector<std::string>& token_chains = float_chains[2 * i + 1];
    for (const db::StepRecord& s : r.steps) {
      logits_chains.push_back(s.logits_chain);
      token_chains.push_back(s.token_chain);
    }
    float_logits_values[i] = float_contrast::FloatsFromLittleEndian(r.step0_logits);
    float_inputs.push_back({&logits_chains, &token_chains, float_logits_values[i]});
    v.float_rows.push_back(i);
    float_artifacts.insert(r.artifact.id);
  }
  v.floats = float_contrast::CompareFloatRows(float_inputs);
  v.float_checkpoints = static_cast<int64_t>(float_artifacts.size());

  // The scenario as a whole.
  if (v.int8_with_hashes == 0) v.problems.push_back("no int8 configuration produced a hash");
  if (artifacts.size() > 1) {
    std::string list;
    for (const std::string& a : artifacts) list += (list.empty() ? "" : ", ") + ShortHash(a, 16);
    v.problems.push_back("the int8 runs used " + std::to_string(artifacts.size()) +
                         " different artifacts (" + list +
                         "): hashes are comparable only for one artifact");
  }

  // Disagreement: every int8 row outside the baseline row's pair of final chains fails, with
  // the step where it leaves the baseline's chains.
  if (v.Disagrees() && v.baseline) {
    const db::RunRecord& base = runs[*v.baseline];
    const std::string& base_name = v.row_names[*v.baseline];
    for (size_t i = 0; i < runs.size(); ++i) {
      const db::RunRecord& r = runs[i];
      RowVerdict& row = v.rows[i];
      if (row.outcome != RowOutcome::kAgrees) continue;
      if (r.final_logits_chain == base.final_logits_chain &&
          r.final_token_chain == base.final_token_chain) {
        continue;
      }
      row.outcome = RowOutcome::kDiverges;
      row.failed = true;
      row.message = row.divergence ? DivergenceText(*row.divergence, base_name)
                                   : "final chains differ from " + base_name + "'s";
    }
  }
  v.agree = v.problems.empty() && v.failures() == 0;

  // Published hashes, at the step each names: reported, never failing.
  const std::vector<const ExpectedHashes*> own = Applicable(published, all_artifacts);
  v.published_known = !own.empty();
  for (const ExpectedHashes* e : own) {
    for (size_t i = 0; i < runs.size(); ++i) {
      const db::RunRecord& r = runs[i];
      if (r.engine != EngineKind::kInt8 || r.status != RunStatus::kOk ||
          !HasPrefix(r.artifact.id, e->artifact)) {
        continue;
      }
      Check(r, *e, v.rows[i].published, "the scenario");
    }
  }
  for (const RowVerdict& row : v.rows) v.published_ok &= row.published != HashMatch::kMismatch;

  // Expectations given by the caller: a row that misses one fails.
  if (expectations != nullptr) {
    const std::vector<const ExpectedHashes*> applicable = Applicable(*expectations, all_artifacts);
    if (applicable.empty() && v.int8_with_hashes > 0) {
      std::string list;
      for (const std::string& a : all_artifacts)
        list += (list.empty() ? "" : ", ") + ShortHash(a, 16);
      v.problems.push_back("--expect has no entry for this scenario and artifact " + list);
    }
    for (const ExpectedHashes* e : applicable) {
      for (size_t i = 0; i < runs.size(); ++i) {
        const db::RunRecord& r = runs[i];
        RowVerdict& row = v.rows[i];
        if (r.engine != EngineKind::kInt8 || r.status != RunStatus::kOk ||
            !HasPrefix(r.artifact.id, e->artifact)) {
          continue;
        }
        const std::string why = Check(r, *e, row.expected, "--expect");
        if (why.empty()) continue;
        row.message = row.failed ? row.message + "; " + why : why;
        row.failed = true;
      }
    }
  }

  if (!skipped.empty()) {
    std::string list;
    for (const std::string& n : skipped) list += (list.empty() ? "" : "; ") + n;
    v.notes.push_back("skipped, not failing: " + list);
  }
  if (float_rows > 0) {
    v.notes.push_back(std::to_string(float_rows) +
                      (float_rows == 1 ? " float contrast row" : " float contrast rows") +
                      ": reported, never gated");
  }
  if (v.float_checkpoints > 1) {
    v.notes.push_back("the float rows ran " + std::to_string(v.float_checkpoints) +
                      " different checkpoints: their contrast mixes models");
  }
  if (!v.published_ok) {
    v.notes.push_back(
        "some int8 rows do not end on the scenario's published hashes (see `detverify report`); "
        "gate on them with --expect");
  }
  v.passed = v.problems.empty() && v.failures() == 0;
  return v;
}

}  // namespace dv::verdict
