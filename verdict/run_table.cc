#include "verdict/run_table.h"

#include <algorithm>
#include <set>

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

}  // namespace

RunTable BuildRunTable(const std::string& scenario_name, const std::vector<db::RunRecord>& runs,
                       const std::vector<ExpectedHashes>& expect) {
  RunTable t;
  t.scenario = scenario_name;
  std::set<std::string> i8_logits, i8_tokens, f_logits;
  for (const db::RunRecord& r : runs) {
    TableRow row;
    nlohmann::json fp = nlohmann::json::parse(r.machine.fingerprint_json, nullptr, false);
    row.device = fingerprint::DeviceLabel(fp.is_discarded() ? nlohmann::json::object() : fp, r.backend);
    row.machine_id = r.machine.id;
    row.configuration = r.configuration;
    row.engine = r.engine;
    row.backend = r.backend;
    row.status = r.status;
    row.status_detail = r.status_detail;
    row.steps = r.n_steps;
    row.logits_chain = r.final_logits_chain.value_or("");
    row.token_chain = r.final_token_chain.value_or("");
    if (t.artifact_id.empty()) {
      t.artifact_id = r.artifact.id;
      t.artifact_source = r.artifact.source;
    }
    if (r.status == "ok" && r.engine == "int8") {
      ++t.int8_ok_runs;
      i8_logits.insert(row.logits_chain);
      i8_tokens.insert(row.token_chain);
      for (const ExpectedHashes& e : expect) {
        if (r.artifact.id.rfind(e.artifact, 0) == 0 && e.steps == r.n_steps) {
          const bool ok = row.logits_chain.rfind(e.logits, 0) == 0 && row.token_chain.rfind(e.tokens, 0) == 0;
          row.expected = ok ? "ok" : "mismatch";
          if (!ok) t.expected_ok = false;
        }
      }
    } else if (r.status == "ok" && r.engine == "float") {
      ++t.float_ok_runs;
      f_logits.insert(row.logits_chain);
    }
    t.rows.push_back(std::move(row));
  }
  t.int8_unique_logits = static_cast<int64_t>(i8_logits.size());
  t.int8_unique_tokens = static_cast<int64_t>(i8_tokens.size());
  t.float_unique_logits = static_cast<int64_t>(f_logits.size());
  t.int8_agree = t.int8_unique_logits <= 1 && t.int8_unique_tokens <= 1;
  return t;
}

std::string RenderRunTableText(const RunTable& t, size_t hex) {
  int64_t steps = 0;
  for (const TableRow& r : t.rows) steps = std::max(steps, r.steps);
  const std::string at = " @" + std::to_string(steps);
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"device", "configuration", "status", "int8 hash" + at, "float hash" + at, "published"});
  for (const TableRow& r : t.rows) {
    const std::string h = r.logits_chain.substr(0, hex);
    const std::string& status = r.status;
    cells.push_back({r.device, r.configuration, status, r.engine == "int8" ? h : "", r.engine == "float" ? h : "",
                     r.expected == "ok" ? "\u2705" : r.expected == "mismatch" ? "\u274c" : ""});
  }
  auto plural = [](int64_t n) { return std::to_string(n) + (n == 1 ? " unique hash" : " unique hashes"); };
  std::string int8_verdict = t.int8_ok_runs == 0 ? "no int8 runs"
                                                  : plural(t.int8_unique_logits) + (t.int8_agree ? " \u2705" : " \u274c");
  std::string float_verdict = t.float_ok_runs == 0 ? "" : plural(t.float_unique_logits);
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
    if (r.status != "ok" && !r.status_detail.empty()) {
      out += "  " + r.configuration + ": " + r.status + ": " + r.status_detail + "\n";
    }
  }
  return out;
}

nlohmann::json RunTableJson(const RunTable& t) {
  nlohmann::json j;
  j["scenario"] = t.scenario;
  j["artifact"] = {{"sha256", t.artifact_id}, {"source", t.artifact_source}};
  j["rows"] = nlohmann::json::array();
  for (const TableRow& r : t.rows) {
    j["rows"].push_back({{"device", r.device}, {"machine_id", r.machine_id}, {"configuration", r.configuration},
                         {"engine", r.engine}, {"backend", r.backend}, {"status", r.status},
                         {"status_detail", r.status_detail}, {"steps", r.steps},
                         {"logits_chain", r.logits_chain}, {"token_chain", r.token_chain},
                         {"published", r.expected}});
  }
  j["verdict"] = {{"int8_runs", t.int8_ok_runs},
                  {"int8_unique_logits_hashes", t.int8_unique_logits},
                  {"int8_unique_token_hashes", t.int8_unique_tokens},
                  {"int8_agree", t.int8_agree},
                  {"float_runs", t.float_ok_runs},
                  {"float_unique_logits_hashes", t.float_unique_logits},
                  {"published_ok", t.expected_ok}};
  return j;
}

}  // namespace dv::verdict
