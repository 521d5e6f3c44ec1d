#include "reports/divergence_rows.h"

namespace dv::reports {
namespace {

DivergenceRow MakeRow(const ScenarioResults& s, size_t i) {
  const db::RunRecord& r = s.runs[i];
  DivergenceRow row;
  row.run = i;
  row.name = s.row_names[i];
  row.configuration = r.configuration;
  row.device = s.table.rows[i].device;
  row.machine_id = r.machine.id;
  row.engine = r.engine;
  row.status = r.status;
  row.status_detail = r.status_detail;
  row.steps = r.n_steps;
  if (const verdict::ChainDivergence* d = s.ComparisonFor(i)) {
    row.compared = true;
    row.divergence = *d;
    row.logits_text = d->logits_step ? "step " + std::to_string(*d->logits_step)
                                     : "never (same chain through step " +
                                           std::to_string(d->compared_steps - 1) + ")";
    row.tokens_text = d->token_step ? "leave at step " + std::to_string(*d->token_step) : "agree";
  } else {
    row.logits_text = "\u2014";
    row.tokens_text = "\u2014";
  }
  return row;
}

}  // namespace

std::string DescribeBaseline(const ScenarioResults& s) {
  if (!s.baseline) return "";
  const db::RunRecord& r = s.runs[*s.baseline];
  return r.configuration + " on " + s.table.rows[*s.baseline].device +
         (s.machine_count > 1 ? ", machine " + ShortHash(r.machine.id, 8) : "") + ", " +
         std::to_string(r.n_steps) + " steps";
}

std::vector<DivergenceRow> DivergenceRows(const ScenarioResults& s) {
  std::vector<DivergenceRow> rows;
  for (size_t i = 0; i < s.runs.size(); ++i) {
    if (s.runs[i].engine == EngineKind::kFloat) rows.push_back(MakeRow(s, i));
  }
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const verdict::ChainDivergence* d = s.ComparisonFor(i);
    if (s.runs[i].engine == EngineKind::kInt8 && d != nullptr && !d->Identical())
      rows.push_back(MakeRow(s, i));
  }
  return rows;
}

}  // namespace dv::reports
