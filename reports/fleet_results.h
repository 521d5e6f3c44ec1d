// The content of a result DB arranged for reports, the gate and attestations: per scenario its
// runs with their steps, the scenario's published hashes, its one verdict (verdict/verdict.h:
// agreement, every run's divergence from the baseline run, published hashes) and the run table
// that shows it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/run_store.h"
#include "verdict/divergence.h"
#include "verdict/expected_hashes.h"
#include "verdict/run_table.h"
#include "verdict/verdict.h"

namespace dv::reports {

struct ScenarioResults {
  db::ScenarioRecord scenario;
  std::string label;  // the name; "name (id 1a2b3c4d)" when two scenarios in the DB share it
  std::vector<verdict::ExpectedHashes> published;  // the scenario's own `expect` list
  std::vector<db::RunRecord> runs;                 // in RunStore::Runs order, with steps
  std::vector<std::string> row_names;     // per run, unique within the scenario (verdict::RowNames)
  verdict::ScenarioVerdict verdict;       // JudgeScenario(runs, published): the one answer
  verdict::RunTable table;                // the run table of that verdict
  std::optional<size_t> baseline;         // the verdict's baseline run
  std::vector<std::string> artifact_ids;  // the distinct artifacts of the runs, sorted
  int64_t steps = 0;                      // the most steps of any run
  size_t machine_count = 0;               // distinct machines among the runs

  // The comparison of run `run` with the baseline, or nullptr (the baseline itself, a run
  // without steps, no baseline).
  const verdict::ChainDivergence* ComparisonFor(size_t run) const;
};

struct FleetResults {
  std::string db_path;
  std::string results_digest;  // ContentDigest(DigestScope::kResultsOnly)
  int schema_version = 0;
  std::vector<db::MachineRecord> machines;    // those with runs in `scenarios`, by id
  std::vector<db::ArtifactRecord> artifacts;  // those of the runs in `scenarios`, by id
  std::vector<ScenarioResults> scenarios;     // by name, then id
  std::vector<std::string> tool_versions;     // the distinct tool versions of the runs, sorted
  std::vector<std::string> spec_versions;     // the distinct spec versions of the runs, sorted
  int64_t attestations = 0;                   // signed statements stored in the DB
};

// Reads everything from `store`. An empty `scenario_selector` selects every scenario; otherwise
// those whose name equals it or whose id starts with it (8 hex digits or more). Throws
// ReportError "<db>: no scenario '<selector>' (known: a, b)" when a selector selects nothing;
// without a selector an empty DB gives FleetResults without scenarios.
FleetResults LoadFleetResults(const db::RunStore& store, const std::string& scenario_selector = "");

// "ab12cd34ef56" style prefix of a hex digest; "" stays "".
using verdict::ShortHash;

}  // namespace dv::reports
