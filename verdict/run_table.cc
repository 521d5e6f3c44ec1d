#include "verdict/run_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fingerprint/fingerprint.h"

namespace dv::verdict {
namespace {

// Display width of UTF-8 text: code points, with the two emoji marks counted as 2 columns.
size_t Width(const std::string& s) {
  size_t w = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) ++w;
  }
  if (s.find("\u2705") != std::string::npos || s.find("\u274c") != std::string::npos) ++w;
  return w;
}

std::string Pad(const std::string& s, size_t w) {
  const size_t cur = Width(s);
  return cur >= w ? s : s + std::string(w - cur, ' ');
}

std::string Plural(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

nlohmann::json FloatContrastJson(const ScenarioVerdict& v) {
  const float_contrast::FloatContrast& f = v.floats;
  auto name = [&](size_t float_index) -> std::string {
    return float_index < v.float_rows.size() && v.float_rows[float_index] < v.row_names.size()
               ? v.row_names[v.float_rows[float_index]]
               : "";
  };
  nlohmann::json j = {{"rows", f.rows},
                      {"unique_logits_hashes", f.unique_logits},
                      {"unique_token_hashes", f.unique_tokens},
                      {"tokens_agree", f.tokens_agree},
                      {"compared_steps", f.compared_steps},
                      {"rows_with_step0_logits", f.rows_with_logits},
                      {"checkpoints", v.float_checkpoints}};
  j["first_token_divergence"] =
      f.first_token_divergence ? nlohmann::json(*f.first_token_divergence) : nullptr;
  j["first_logits_divergence"] =
      f.first_logits_divergence ? nlohmann::json(*f.first_logits_divergence) : nullptr;
  if (f.cushion && f.cushion->finite) {
    const float_contrast::Cushion& c = *f.cushion;
    j["cushion"] = {{"max_abs_delta", c.max_abs_delta},
                    {"delta_rows", {name(c.delta_row_a), name(c.delta_row_b)}},
                    {"delta_token", c.delta_index},
                    {"min_margin", c.min_margin},
                    {"margin_row", name(c.margin_row)},
                    {"margin_tokens", {c.margin_top1, c.margin_top2}}};
    j["cushion"]["ratio"] = c.Ratio() ? nlohmann::json(*c.Ratio()) : nullptr;
  } else {
    j["cushion"] = nullptr;
  }
  return j;
}

}  // namespace

RunTable BuildRunTable(const std::string& scenario_name, const std::vector<db::RunRecord>& runs,
                       const std::vector<ExpectedHashes>& published) {
  return BuildRunTable(scenario_name, runs, JudgeScenario(runs, published));
}

RunTable BuildRunTable(const std::string& scenario_name, const std::vector<db::RunRecord>& runs,
                       ScenarioVerdict verdict) {
  RunTable t;
  t.scenario = scenario_name;
  for (size_t i = 0; i < runs.size(); ++i) {
    const db::RunRecord& r = runs[i];
    TableRow row;
    const nlohmann::json fp = nlohmann::json::parse(r.machine.fingerprint_json, nullptr, false);
    row.device = fingerprint::DeviceLabel(fp.is_discarded() ? nlohmann::json::object() : fp,
                                          KindName(r.backend));
    row.machine_id = r.machine.id;
    row.configuration = r.configuration;
    row.name = i < verdict.row_names.size() ? verdict.row_names[i] : r.configuration;
    row.engine = r.engine;
    row.backend = r.backend;
    row.status = r.status;
    row.status_detail = r.status_detail;
    row.steps = r.n_steps;
    row.logits_chain = r.final_logits_chain.value_or("");
    row.token_chain = r.final_token_chain.value_or("");
    if (i < verdict.rows.size()) {
      row.published = verdict.rows[i].published;
      row.outcome = verdict.rows[i].outcome;
    }
    if (t.artifact_id.empty()) {
      t.artifact_id = r.artifact.id;
      t.artifact_source = r.artifact.source;
    }
    t.rows.push_back(std::move(row));
  }
  t.verdict = std::move(verdict);
  return t;
}

std::string Int8VerdictText(const ScenarioVerdict& v) {
  if (v.int8_with_hashes == 0) return "no int8 hash";
  std::string text = Plural(v.int8_unique_logits, "unique hash", "unique hashes");
  if (!v.agree && !v.Disagrees()) {
    // The hashes alone would pass: say what the verdict also counts.
    size_t no_hash = 0;
    for (const RowVerdict& r : v.rows) no_hash += r.outcome == RowOutcome::kNoHash;
    if (no_hash > 0)
      text += ", " + Plural(static_cast<int64_t>(no_hash), "row", "rows") + " without a hash";
    if (v.artifacts.size() > 1)
      text += ", " + Plural(static_cast<int64_t>(v.artifacts.size()), "artifact", "artifacts");
  }
  return text;
}

std::string FloatVerdictText(const ScenarioVerdict& v) {
  if (v.float_with_hashes == 0) return "";
  return Plural(v.float_unique_logits, "unique hash", "unique hashes") +
         (v.float_unique_logits == 1 ? " \u2705" : " \u274c");
}

std::string FormatLogitValue(double value) {
  char buf[32];
  if (value != 0 && std::fabs(value) < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3e", value);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", value);
  }
  return buf;
}

std::vector<std::string> FloatContrastLines(const ScenarioVerdict& v) {
  std::vector<std::string> lines;
  const float_contrast::FloatContrast& f = v.floats;
  if (f.rows == 0) return lines;
  auto name = [&](size_t float_index) {
    return float_index < v.float_rows.size() && v.float_rows[float_index] < v.row_names.size()
               ? v.row_names[v.float_rows[float_index]]
               : "?";
  };
  std::string logits = f.first_logits_divergence
                           ? "logits differ from step " + std::to_string(*f.first_logits_divergence)
                           : "logits identical over " + std::to_string(f.compared_steps) + " steps";
  std::string tokens;
  if (f.rows < 2) {
    tokens = "one float row: nothing to compare";
  } else if (f.tokens_agree) {
    tokens = "tokens agree over all " + std::to_string(f.compared_steps) + " steps";
  } else if (f.first_token_divergence) {
    tokens = "tokens diverge at step " + std::to_string(*f.first_token_divergence) + " (" +
             Plural(f.unique_tokens, "unique token hash", "unique token hashes") + ")";
  } else {
    tokens = "tokens agree over the " + std::to_string(f.compared_steps) +
             " steps every row has (rows of different lengths)";
  }
  lines.push_back("float rows: " + Plural(f.rows, "row", "rows") + " with hashes; " +
                  (f.rows < 2 ? tokens : logits + "; " + tokens));
  if (f.cushion) {
    const float_contrast::Cushion& c = *f.cushion;
    std::string line = "step-0 cushion: ";
    if (!c.finite) {
      line += "not computed (a float row's step-0 logits are not all finite)";
    } else {
      line += "max |\u0394logit| " + FormatLogitValue(c.max_abs_delta);
      if (c.max_abs_delta > 0) {
        line += " (" + name(c.delta_row_a) + " vs " + name(c.delta_row_b) + ", token " +
                std::to_string(c.delta_index) + ")";
      }
      line += " vs top-1/top-2 margin " + FormatLogitValue(c.min_margin) + " (" +
              name(c.margin_row) + ", tokens " + std::to_string(c.margin_top1) + "/" +
              std::to_string(c.margin_top2) + ")";
      if (const auto ratio = c.Ratio()) {
        line += ": margin = " + FormatLogitValue(*ratio) + " x max |\u0394|";
      } else {
        line += ": the rows' step-0 logits are identical";
      }
    }
    lines.push_back(line);
  } else if (f.rows >= 2) {
    lines.push_back("step-0 cushion: not computed (" + std::to_string(f.rows_with_logits) + " of " +
                    std::to_string(f.rows) +
                    " float rows have step-0 logits recorded; it needs two)");
  }
  return lines;
}

const char* PublishedText(HashMatch match) {
  switch (match) {
    case HashMatch::kMatch:
      return "ok";
    case HashMatch::kMismatch:
      return "mismatch";
    case HashMatch::kTooShort:
      return "short";
    case HashMatch::kNone:
      break;
  }
  return "";
}

std::string RenderRunTableText(const RunTable& t, size_t hex) {
  int64_t steps = 0;
  for (const TableRow& r : t.rows) steps = std::max(steps, r.steps);
  const std::string at = " @" + std::to_string(steps);
  std::vector<std::vector<std::string>> cells;
  cells.push_back(
      {"device", "configuration", "status", "int8 hash" + at, "float hash" + at, "published"});
  for (const TableRow& r : t.rows) {
    const std::string h = r.logits_chain.substr(0, hex);
    cells.push_back({r.device, r.configuration, std::string(KindName(r.status)),
                     r.engine == EngineKind::kInt8 ? h : "",
                     r.engine == EngineKind::kFloat ? h : "",
                     r.published == HashMatch::kMatch      ? "\u2705"
                     : r.published == HashMatch::kMismatch ? "\u274c"
                                                           : ""});
  }
  const ScenarioVerdict& v = t.verdict;
  const std::string int8_verdict = Int8VerdictText(v) + (v.agree ? " \u2705" : " \u274c");
  const std::string float_verdict = FloatVerdictText(v);
  cells.push_back({"", "", "", int8_verdict, float_verdict, ""});
  std::vector<size_t> w(cells[0].size(), 0);
  for (const auto& row : cells)
    for (size_t c = 0; c < row.size(); ++c) w[c] = std::max(w[c], Width(row[c]));
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) {
    std::string line;
    for (size_t c = 0; c < cells[i].size(); ++c) line += Pad(cells[i][c], w[c] + 3);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  // Why rows did not run, below the table so the columns stay narrow.
  for (const TableRow& r : t.rows) {
    if (r.status != RunStatus::kOk && !r.status_detail.empty()) {
      out += "  " + r.configuration + ": " + std::string(KindName(r.status)) + ": " +
             r.status_detail + "\n";
    }
  }
  for (size_t i = 0; i < t.rows.size() && i < v.rows.size(); ++i) {
    if (v.rows[i].outcome == RowOutcome::kDiverges) {
      out += "  " + t.rows[i].name + ": " + v.rows[i].message + "\n";
    }
  }
  for (const std::string& line : FloatContrastLines(v)) out += "  " + line + "\n";
  for (const std::string& p : v.problems) out += "  " + p + "\n";
  return out;
}

nlohmann::json RunTableJson(const RunTable& t) {
  const ScenarioVerdict& v = t.verdict;
  nlohmann::json j;
  j["scenario"] = t.scenario;
  j["artifact"] = {{"sha256", t.artifact_id}, {"source", t.artifact_source}};
  j["rows"] = nlohmann::json::array();
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const TableRow& r = t.rows[i];
    j["rows"].push_back({{"device", r.device},
                         {"machine_id", r.machine_id},
                         {"configuration", r.configuration},
                         {"engine", KindName(r.engine)},
                         {"backend", KindName(r.backend)},
                         {"status", KindName(r.status)},
                         {"status_detail", r.status_detail},
                         {"steps", r.steps},
                         {"logits_chain", r.logits_chain},
                         {"token_chain", r.token_chain},
                         {"published", PublishedText(r.published)},
                         {"verdict", i < v.rows.size() ? v.rows[i].message : ""}});
  }
  j["verdict"] = {{"int8_runs", v.int8_with_hashes},
                  {"int8_unique_logits_hashes", v.int8_unique_logits},
                  {"int8_unique_token_hashes", v.int8_unique_tokens},
                  {"int8_agree", v.agree},
                  {"float_runs", v.float_with_hashes},
                  {"float_unique_logits_hashes", v.float_unique_logits},
                  {"published_ok", v.published_ok},
                  {"float", FloatContrastJson(v)},
                  {"problems", v.problems}};
  return j;
}

}  // namespace dv::verdict
