// The report's chart of where rows leave the baseline: one inline SVG, no script, no fonts or
// images fetched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reports/divergence_rows.h"

namespace dv::reports {

// One band per row over steps 0..total_steps: a logits bar and a token bar, green while the
// row's chain equals the baseline's, amber (logits) or red (tokens) from the step where it
// leaves, grey for a row without steps; a dashed line and the step number mark the departure.
// Every shape carries a <title> with the exact numbers. Rows are labelled with their
// configuration, engine and status, and with their machine's id prefix when `show_machines`.
// "" for no rows.
std::string RenderDivergenceChart(const std::vector<DivergenceRow>& rows, int64_t total_steps,
                                  const std::string& baseline_name, bool show_machines);

}  // namespace dv::reports
