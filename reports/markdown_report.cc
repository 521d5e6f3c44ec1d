#include "reports/markdown_report.h"

#include "build_info.h"
#include "reports/divergence_rows.h"
#include "reports/gate.h"
#include "reports/machine_facts.h"
#include "reports/markup_escape.h"

namespace dv::reports {
namespace {

std::string Cell(const std::string& text) { return EscapeMarkdownCell(text); }

std::string Code(const std::string& text) { return text.empty() ? "" : MarkdownCode(text); }

std::string Plural(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

void RenderHeader(const FleetResults& fleet, std::string& out) {
  out += "# detverify report\n\n";
  out += "| | |\n|---|---|\n";
  out += "| database | " + Code(fleet.db_path) + " (schema " +
         std::to_string(fleet.schema_version) + ") |\n";
  out += "| results digest | " + Code(fleet.results_digest) + " |\n";
  for (const db::ArtifactRecord& a : fleet.artifacts) {
    out += "| artifact sha256 | " + Code(a.id) + " " + Cell(a.source) +
           (a.synthetic ? " (synthetic model)" : "") + " |\n";
  }
  out += "| runs recorded by | detverify " + Cell(Join(fleet.tool_versions)) + ", spec " +
         Cell(Join(fleet.spec_versions)) + " |\n";
  out += std::string("| report written by | detverify ") + dv::build::kToolVersion + ", spec " +
         dv::build::kSpecVersion + ", commit " + dv::build::kGitCommit + " |\n";
  out += "| machines | " + std::to_string(fleet.machines.size()) + " |\n";
  out += "| signed statements | " + std::to_string(fleet.attestations) + " |\n\n";
  if (fleet.scenarios.empty()) out += "The database holds no runs.\n\n";
}

void RenderScenario(const ScenarioResults& s, const ScenarioGate& gate, std::string& out) {
  const verdict::RunTable& t = s.table;
  out += "## Scenario " + Code(s.label) + "\n\n";
  out += "scenario id " + Code(s.scenario.id) + " \u00b7 " + std::to_string(s.steps) +
         " steps \u00b7 artifact " +
         (s.artifact_ids.size() == 1
              ? Code(s.artifact_ids[0]) + " " + Cell(t.artifact_source)
              : Plural(static_cast<int64_t>(s.artifact_ids.size()), "artifact", "artifacts")) +
         "\n\n";
  out += std::string("**gate: ") + (gate.passed ? "\u2705 pass" : "\u274c fail") + "** \u2014 " +
         Cell(gate.int8_ok == 0  ? "no int8 configuration produced a hash"
              : gate.Disagrees() ? "int8 rows disagree"
                                 : Plural(gate.int8_ok, "int8 row agrees", "int8 rows agree")) +
         "\n\n";

  const std::string at = " @" + std::to_string(s.steps);
  out += "| device | machine | configuration | status | int8 hash" + at + " | float hash" + at +
         " | tokens" + at + " | published |\n|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const verdict::TableRow& r = t.rows[i];
    const std::string h = Code(ShortHash(r.logits_chain));
    out += "| " + Cell(r.device) + " | " + Code(ShortHash(r.machine_id, 8)) + " | " +
           Cell(r.configuration) + " | " + Cell(std::string(KindName(r.status))) + " | " +
           (r.engine == EngineKind::kInt8 ? h : "") + " | " +
           (r.engine == EngineKind::kFloat ? h : "") + " | " + Code(ShortHash(r.token_chain)) +
           " | " +
           (r.published == verdict::HashMatch::kMatch      ? "\u2705"
            : r.published == verdict::HashMatch::kMismatch ? "\u274c"
                                                           : "") +
           " |\n";
  }
  const verdict::ScenarioVerdict& v = t.verdict;
  const std::string int8_verdict = verdict::Int8VerdictText(v) + (v.agree ? " \u2705" : " \u274c");
  out += "| | | | | **" + int8_verdict + "** | " + verdict::FloatVerdictText(v) + " | | |\n\n";
  const std::vector<std::string> float_lines = verdict::FloatContrastLines(v);
  if (!float_lines.empty()) {
    out += "Float contrast rows (measured, never gated):\n\n";
    for (const std::string& line : float_lines) out += "- " + Cell(line) + "\n";
    out += "\n";
  }

  bool any_not_ok = false;
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const db::RunRecord& r = s.runs[i];
    if (r.status == RunStatus::kOk) continue;
    if (!any_not_ok) out += "Rows without hashes:\n\n";
    any_not_ok = true;
    out += "- " + Code(s.row_names[i]) + ": **" + Cell(std::string(KindName(r.status))) + "**" +
           (r.status_detail.empty() ? "" : " \u2014 " + Cell(r.status_detail)) + "\n";
  }
  if (any_not_ok) out += "\n";
  for (const GateCase& c : gate.cases) {
    if (c.outcome == CaseOutcome::kFail)
      out += "- \u274c " + Code(c.name) + ": " + Cell(c.message) + "\n";
  }
  for (const std::string& p : gate.problems) out += "- \u274c " + Cell(p) + "\n";

  out += "\n### Divergence from the int8 batch-1 row\n\n";
  if (!s.baseline) {
    out += "No int8 row produced steps, so there is nothing to compare with.\n\n";
    return;
  }
  out += "Baseline: " + Cell(DescribeBaseline(s)) +
         ". A row *leaves* the baseline at the first step whose logits-chain hash differs from "
         "the baseline's at that step; its tokens *agree* while its token chain stays equal.\n\n";
  const std::vector<DivergenceRow> rows = DivergenceRows(s);
  if (rows.empty()) {
    out += "No float rows, and every int8 row follows the baseline's chains.\n\n";
    return;
  }
  out +=
      "| configuration | device | machine | engine | status | logits leave the baseline at | "
      "tokens |\n|---|---|---|---|---|---|---|\n";
  for (const DivergenceRow& r : rows) {
    std::string tokens = r.tokens_text;
    if (!r.compared && r.status != RunStatus::kOk)
      tokens = r.status_detail.empty() ? "\u2014" : r.status_detail;
    out += "| " + Cell(r.configuration) + " | " + Cell(r.device) + " | " +
           Code(ShortHash(r.machine_id, 8)) + " | " + std::string(KindName(r.engine)) + " | " +
           Cell(std::string(KindName(r.status))) + " | " + Cell(r.logits_text) + " | " +
           Cell(tokens) + " |\n";
  }
  out += "\n";
}

void RenderMachines(const FleetResults& fleet, std::string& out) {
  out += "## Machines\n\n";
  for (const db::MachineRecord& m : fleet.machines) {
    const auto facts = MachineFacts(m.fingerprint_json);
    out += "### " + Cell(facts.front().second) + " \u2014 " + Code(ShortHash(m.id, 16)) + "\n\n";
    out += "| | |\n|---|---|\n";
    out += "| machine id | " + Code(m.id) + " |\n";
    for (const auto& [label, value] : facts)
      out += "| " + Cell(label) + " | " + Cell(value) + " |\n";
    out += "\n<details><summary>fingerprint</summary>\n\n```json\n" +
           PrettyFingerprint(m.fingerprint_json) + "\n```\n\n</details>\n\n";
  }
}

}  // namespace

std::string RenderMarkdownReport(const FleetResults& fleet) {
  std::string out;
  RenderHeader(fleet, out);
  const GateResult gate = EvaluateGate(fleet);
  for (size_t i = 0; i < fleet.scenarios.size(); ++i)
    RenderScenario(fleet.scenarios[i], gate.scenarios[i], out);
  if (!fleet.machines.empty()) RenderMachines(fleet, out);
  return out;
}

}  // namespace dv::reports
