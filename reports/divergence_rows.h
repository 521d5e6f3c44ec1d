// The rows of a report's divergence section and chart: every float row of a scenario, and every
// int8 row whose chains leave the baseline's, each with where it leaves it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reports/fleet_results.h"

namespace dv::reports {

struct DivergenceRow {
  size_t run = 0;    // index into ScenarioResults::runs
  std::string name;  // ScenarioResults::row_names
  std::string configuration, device, machine_id, status_detail;
  EngineKind engine = EngineKind::kInt8;
  RunStatus status = RunStatus::kOk;
  int64_t steps = 0;
  bool compared = false;  // false: no steps or no baseline, nothing to compare
  verdict::ChainDivergence divergence;
  std::string logits_text;  // "step 17", or "never (same chain through step 31)"
  std::string tokens_text;  // "agree", or "leave at step 23"
};

// Float rows first, in run order, then the int8 rows that leave the baseline. Empty when the
// scenario has neither.
std::vector<DivergenceRow> DivergenceRows(const ScenarioResults& scenario);

// "int8-ref-b1 on AMD EPYC 9654 (cpu), 512 steps" (with ", machine 1a2b3c4d" after the device
// when several machines ran the scenario); "" without a baseline.
std::string DescribeBaseline(const ScenarioResults& scenario);

}  // namespace dv::reports
