#include "reports/html_report.h"

#include "base/run_kinds.h"
#include "build_info.h"
#include "reports/divergence_chart.h"
#include "reports/divergence_rows.h"
#include "reports/gate.h"
#include "reports/machine_facts.h"
#include "reports/markup_escape.h"

namespace dv::reports {
namespace {

constexpr const char* kStyle = R"css(
:root { --ink: #1f2933; --faint: #6b7684; --line: #e3e7ec; --ok: #2e9d5b; --fail: #d64541;
        --warn: #b7791f; --skip: #8a94a3; --bg: #f7f8fa; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 28px 32px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 0 0 6px; }
h3 { font-size: 15px; margin: 22px 0 8px; }
.lead { color: var(--faint); margin: 0 0 18px; }
section, .card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 18px 20px;
                 margin: 0 0 20px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 0; }
dl.facts dt { color: var(--faint); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
code, .hash { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
              font-size: 12.5px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 4px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--faint); font-size: 12px; text-transform: uppercase; letter-spacing: .03em;
     background: #fbfcfd; }
tr.verdict td { border-bottom: none; font-weight: 600; }
.badge { display: inline-block; padding: 1px 9px; border-radius: 10px; font-size: 12px; font-weight: 600;
         color: #fff; }
.badge.ok { background: var(--ok); } .badge.fail { background: var(--fail); }
.badge.skipped { background: var(--skip); } .badge.warn { background: var(--warn); }
.status-ok { color: var(--ok); } .status-bad { color: var(--fail); font-weight: 600; }
.status-skipped { color: var(--skip); }
.mark-ok { color: var(--ok); } .mark-bad { color: var(--fail); }
ul.problems { margin: 8px 0; padding-left: 20px; }
ul.problems li.bad { color: var(--fail); }
ul.problems li.note { color: var(--faint); }
svg.chart { width: 100%; height: auto; display: block; margin: 8px 0 10px; }
details summary { cursor: pointer; color: var(--faint); margin-top: 8px; }
pre { background: #f3f5f8; border-radius: 6px; padding: 10px 12px; overflow-x: auto; font-size: 12px; }
.machines { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 16px; }
.machines .card { margin: 0; }
footer { color: var(--faint); font-size: 12px; margin-top: 24px; }
)css";

std::string E(const std::string& text) { return EscapeXml(text); }

std::string Hash(const std::string& hex, size_t digits = 12) {
  if (hex.empty()) return "";
  return "<span class=\"hash\" title=\"" + E(hex) + "\">" + E(ShortHash(hex, digits)) + "</span>";
}

std::string Plural(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

std::string StatusClass(const std::string& status) {
  const std::optional<RunStatus> kind = ParseKind<RunStatus>(status);
  if (kind == RunStatus::kOk) return "status-ok";
  if (kind == RunStatus::kSkipped) return "status-skipped";
  return "status-bad";
}

void RenderHeader(const FleetResults& fleet, std::string& out) {
  out += "<header><h1>detverify report</h1><p class=\"lead\">" +
         Plural(static_cast<int64_t>(fleet.scenarios.size()), "scenario", "scenarios") +
         " \u00b7 " + Plural(static_cast<int64_t>(fleet.machines.size()), "machine", "machines") +
         " \u00b7 every int8 row's logits and tokens chain-hashed at every step</p></header>\n";
  out += "<section id=\"summary\"><dl class=\"facts\">";
  out += "<dt>database</dt><dd><code>" + E(fleet.db_path) + "</code> (schema " +
         std::to_string(fleet.schema_version) + ")</dd>";
  out += "<dt>results digest</dt><dd><code>" + E(fleet.results_digest) + "</code></dd>";
  for (const db::ArtifactRecord& a : fleet.artifacts) {
    out += "<dt>artifact sha256</dt><dd><code>" + E(a.id) + "</code> " + E(a.source) +
           (a.synthetic ? " <span class=\"badge warn\">synthetic model</span>" : "") + "</dd>";
  }
  out += "<dt>runs recorded by</dt><dd>detverify " + E(Join(fleet.tool_versions)) + ", spec " +
         E(Join(fleet.spec_versions)) + "</dd>";
  out += std::string("<dt>report written by</dt><dd>detverify ") + E(dv::build::kToolVersion) +
         ", spec " + E(dv::build::kSpecVersion) + ", commit " + E(dv::build::kGitCommit) + "</dd>";
  out += "<dt>signed statements</dt><dd>" + std::to_string(fleet.attestations) + "</dd>";
  out += "</dl>";
  if (fleet.scenarios.empty()) out += "<p>The database holds no runs.</p>";
  out += "</section>\n";
}

void RenderScenario(const ScenarioResults& s, const ScenarioGate& gate, std::string& out) {
  const verdict::RunTable& t = s.table;
  out += "<section class=\"scenario\" id=\"scenario-" + E(s.scenario.id.substr(0, 16)) + "\">";
  out += "<h2>Scenario " + E(s.label) + " <span class=\"badge " +
         (gate.passed ? "ok\">gate: pass" : "fail\">gate: fail") + "</span></h2>";
  out += "<p class=\"lead\">scenario id " + Hash(s.scenario.id, 16) + " \u00b7 " +
         std::to_string(s.steps) + " steps \u00b7 artifact " +
         (s.artifact_ids.size() == 1
              ? Hash(s.artifact_ids[0], 16) + " " + E(t.artifact_source)
              : E(Plural(static_cast<int64_t>(s.artifact_ids.size()), "artifact", "artifacts"))) +
         "</p>";

  const std::string at = " @" + std::to_string(s.steps);
  out += "<table class=\"runs\"><thead><tr>";
  const std::vector<std::string> heads = {"device",      "machine",        "configuration",
                                          "status",      "int8 hash" + at, "float hash" + at,
                                          "tokens" + at, "published"};
  for (const std::string& head : heads) out += "<th>" + E(head) + "</th>";
  out += "</tr></thead><tbody>";
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const verdict::TableRow& r = t.rows[i];
    const std::string status(KindName(r.status));
    out +=
        "<tr><td>" + E(r.device) + "</td><td>" + Hash(r.machine_id, 8) + "</td><td>" +
        E(r.configuration) + "</td><td class=\"" + StatusClass(status) + "\">" + E(status) +
        "</td><td>" + (r.engine == EngineKind::kInt8 ? Hash(r.logits_chain) : "") + "</td><td>" +
        (r.engine == EngineKind::kFloat ? Hash(r.logits_chain) : "") + "</td><td>" +
        Hash(r.token_chain) + "</td><td>" +
        (r.published == verdict::HashMatch::kMatch ? "<span class=\"mark-ok\">\u2714 matches</span>"
         : r.published == verdict::HashMatch::kMismatch
             ? "<span class=\"mark-bad\">\u2718 differs</span>"
             : "") +
        "</td></tr>";
  }
  const verdict::ScenarioVerdict& v = t.verdict;
  const std::string int8_verdict = verdict::Int8VerdictText(v) + (v.agree ? " \u2714" : " \u2718");
  out += "<tr class=\"verdict\"><td colspan=\"4\">verdict</td><td class=\"" +
         std::string(v.agree ? "mark-ok" : "mark-bad") + "\">" + E(int8_verdict) + "</td><td>" +
         E(verdict::FloatVerdictText(v)) + "</td><td colspan=\"2\"></td></tr>";
  out += "</tbody></table>";
  const std::vector<std::string> float_lines = verdict::FloatContrastLines(v);
  if (!float_lines.empty()) {
    out += "<p>Float contrast rows (measured, never gated):</p><ul class=\"float-contrast\">";
    for (const std::string& line : float_lines) out += "<li>" + E(line) + "</li>";
    out += "</ul>";
  }

  std::string items;
  for (const std::string& p : gate.problems) items += "<li class=\"bad\">" + E(p) + "</li>";
  for (const GateCase& c : gate.cases) {
    if (c.outcome == CaseOutcome::kFail)
      items += "<li class=\"bad\"><b>" + E(c.name) + "</b>: " + E(c.message) + "</li>";
  }
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const db::RunRecord& r = s.runs[i];
    if (r.status == RunStatus::kSkipped) {
      items += "<li class=\"note\"><b>" + E(s.row_names[i]) + "</b>: skipped" +
               (r.status_detail.empty() ? "" : " \u2014 " + E(r.status_detail)) + "</li>";
    }
  }
  if (!items.empty()) out += "<ul class=\"problems\">" + items + "</ul>";

  out += "<h3>Divergence from the int8 batch-1 row</h3>";
  if (!s.baseline) {
    out += "<p>No int8 row produced steps, so there is nothing to compare with.</p></section>\n";
    return;
  }
  out += "<p class=\"lead\">Baseline: <b>" + E(DescribeBaseline(s)) +
         "</b>. A row leaves the baseline at the first step whose logits-chain hash differs from "
         "the baseline's at that step; its tokens agree while its token chain stays equal.</p>";
  const std::vector<DivergenceRow> rows = DivergenceRows(s);
  if (rows.empty()) {
    out += "<p>No float rows, and every int8 row follows the baseline's chains.</p></section>\n";
    return;
  }
  out += RenderDivergenceChart(rows, s.steps, s.row_names[*s.baseline], s.machine_count > 1);
  out +=
      "<table class=\"divergence\"><thead><tr><th>configuration</th><th>device</th>"
      "<th>machine</th><th>engine</th><th>status</th><th>logits leave the baseline at</th>"
      "<th>tokens</th></tr></thead><tbody>";
  for (const DivergenceRow& r : rows) {
    std::string tokens = r.tokens_text;
    if (!r.compared && r.status != RunStatus::kOk)
      tokens = r.status_detail.empty() ? "\u2014" : r.status_detail;
    out += "<tr><td>" + E(r.configuration) + "</td><td>" + E(r.device) + "</td><td>" +
           Hash(r.machine_id, 8) + "</td><td>" + E(std::string(KindName(r.engine))) +
           "</td><td class=\"" + StatusClass(std::string(KindName(r.status))) + "\">" +
           E(std::string(KindName(r.status))) + "</td><td>" + E(r.logits_text) + "</td><td>" +
           E(tokens) + "</td></tr>";
  }
  out += "</tbody></table></section>\n";
}

void RenderMachines(const FleetResults& fleet, std::string& out) {
  out += "<section id=\"machines\"><h2>Machines</h2><div class=\"machines\">";
  for (const db::MachineRecord& m : fleet.machines) {
    const auto facts = MachineFacts(m.fingerprint_json);
    out += "<div class=\"card\"><h3>" + E(facts.front().second) + " " + Hash(m.id, 16) +
           "</h3><dl class=\"facts\">";
    out += "<dt>machine id</dt><dd><code>" + E(m.id) + "</code></dd>";
    for (const auto& [label, value] : facts)
      out += "<dt>" + E(label) + "</dt><dd>" + E(value) + "</dd>";
    out += "</dl><details><summary>fingerprint</summary><pre>" +
           E(PrettyFingerprint(m.fingerprint_json)) + "</pre></details></div>";
  }
  out += "</div></section>\n";
}

}  // namespace

std::string RenderHtmlReport(const FleetResults& fleet) {
  std::string title = "detverify report";
  if (fleet.scenarios.size() == 1) title += " \u2014 " + fleet.scenarios[0].label;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>" +
      E(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<main>\n";
  RenderHeader(fleet, out);
  const GateResult gate = EvaluateGate(fleet);
  for (size_t i = 0; i < fleet.scenarios.size(); ++i)
    RenderScenario(fleet.scenarios[i], gate.scenarios[i], out);
  if (!fleet.machines.empty()) RenderMachines(fleet, out);
  out += "<footer>Written by detverify " + E(dv::build::kToolVersion) +
         ". Hashes show their first digits; hover for the full "
         "SHA-256.</footer>\n</main>\n</body>\n</html>\n";
  return out;
}

}  // namespace dv::reports
