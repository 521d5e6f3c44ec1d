// The run table (DESIGN.md §1): one row per configuration run, its int8 / float chain hash at
// the last step, ✅/❌ against the scenario's published hashes (at the step they name), and the
// verdict line -- all read from the scenario's one verdict (verdict.h). Shared by `run`,
// `report` and `gate`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/run_kinds.h"
#include "db/records.h"
#include "verdict/expected_hashes.h"
#include "verdict/verdict.h"

namespace dv::verdict {

struct TableRow {
  std::string device;  // from the machine's fingerprint
  std::string machine_id;
  std::string configuration;
  std::string name;  // RowNames: unique within the scenario
  EngineKind engine = EngineKind::kInt8;
  BackendKind backend = BackendKind::kReference;
  RunStatus status = RunStatus::kOk;
  std::string status_detail;
  int64_t steps = 0;
  std::string logits_chain, token_chain;   // full final digests ("" when none)
  HashMatch published = HashMatch::kNone;  // against the scenario's published hashes
  RowOutcome outcome = RowOutcome::kAgrees;
};

struct RunTable {
  std::string scenario;
  std::string artifact_id, artifact_source;
  std::vector<TableRow> rows;
  ScenarioVerdict verdict;
};

// The table of `runs` with their verdict (judged here against `published`, or given).
RunTable BuildRunTable(const std::string& scenario_name, const std::vector<db::RunRecord>& runs,
                       const std::vector<ExpectedHashes>& published);
RunTable BuildRunTable(const std::string& scenario_name, const std::vector<db::RunRecord>& runs,
                       ScenarioVerdict verdict);

// The verdict line's words: "1 unique hash", "2 unique hashes", "no int8 hash", with the reason
// the rows do not agree when the hashes alone do not show it ("1 unique hash, 1 row without a
// hash"). No mark; callers add ✅/❌ from verdict.agree.
std::string Int8VerdictText(const ScenarioVerdict& verdict);
// The float column's words: "4 unique hashes ❌" (the float rows end on different logits
// chains), "1 unique hash ✅", "" without float hashes. The mark shows what the float rows did;
// it is never part of the verdict.
std::string FloatVerdictText(const ScenarioVerdict& verdict);
// What the float rows show, one line each ("" lines left out): their token agreement and the
// step they part at, and the step-0 cushion with the rows it comes from. Empty without float
// rows with hashes. Shared by the run table, the Markdown and the HTML report.
std::vector<std::string> FloatContrastLines(const ScenarioVerdict& verdict);
// A value the way the float lines print it: 4 significant digits, scientific below 1e-3.
std::string FormatLogitValue(double value);
// "ok", "mismatch", "short" (the row ends before the published step) or "".
const char* PublishedText(HashMatch match);

// The text table; hashes shown with `hex_digits` digits (12 in tables).
std::string RenderRunTableText(const RunTable& table, size_t hex_digits = 12);
nlohmann::json RunTableJson(const RunTable& table);

}  // namespace dv::verdict
