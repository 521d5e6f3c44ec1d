#include "reports/fleet_results.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "reports/report_error.h"

namespace dv::reports {

const verdict::ChainDivergence* ScenarioResults::ComparisonFor(size_t run) const {
  if (run >= verdict.rows.size() || !verdict.rows[run].divergence) return nullptr;
  return &*verdict.rows[run].divergence;
}

FleetResults LoadFleetResults(const db::RunStore& store, const std::string& scenario_selector) {
  FleetResults fleet;
  fleet.db_path = store.Path();
  fleet.results_digest = store.ContentDigest(db::DigestScope::kResultsOnly);
  fleet.schema_version = store.SchemaVersion();
  fleet.attestations = static_cast<int64_t>(store.Attestations().size());

  const std::vector<db::ScenarioRecord> all = store.Scenarios();
  std::map<std::string, int> name_count;
  for (const db::ScenarioRecord& s : all) ++name_count[s.name];
  std::vector<db::ScenarioRecord> selected;
  for (const db::ScenarioRecord& s : all) {
    if (scenario_selector.empty() || s.name == scenario_selector ||
        (scenario_selector.size() >= 8 && s.id.rfind(scenario_selector, 0) == 0)) {
      selected.push_back(s);
    }
  }
  if (!scenario_selector.empty() && selected.empty()) {
    std::string known;
    for (const db::ScenarioRecord& s : all) known += (known.empty() ? "" : ", ") + s.name;
    throw ReportError(store.Path() + ": no scenario '" + scenario_selector +
                      "' (known: " + (known.empty() ? "none, the DB is empty" : known) + ")");
  }

  std::set<std::string> machine_ids, artifact_ids, tools, specs;
  for (const db::ScenarioRecord& s : selected) {
    ScenarioResults sr;
    sr.scenario = s;
    sr.label = name_count[s.name] > 1 ? s.name + " (id " + ShortHash(s.id, 8) + ")" : s.name;
    sr.published = verdict::PublishedHashes(s.canonical_text);
    sr.runs = store.Runs(s.id, db::StepLoading::kWithSteps);
    sr.verdict = verdict::JudgeScenario(sr.runs, sr.published);
    sr.row_names = sr.verdict.row_names;
    sr.baseline = sr.verdict.baseline;
    sr.table = verdict::BuildRunTable(sr.label, sr.runs, sr.verdict);
    std::set<std::string> artifacts, machines;
    for (size_t i = 0; i < sr.runs.size(); ++i) {
      const db::RunRecord& r = sr.runs[i];
      artifacts.insert(r.artifact.id);
      machine_ids.insert(r.machine.id);
      machines.insert(r.machine.id);
      tools.insert(r.tool_version);
      specs.insert(r.spec_version);
      sr.steps = std::max(sr.steps, r.n_steps);
    }
    sr.artifact_ids.assign(artifacts.begin(), artifacts.end());
    sr.machine_count = machines.size();
    artifact_ids.insert(artifacts.begin(), artifacts.end());
    fleet.scenarios.push_back(std::move(sr));
  }
  for (const db::MachineRecord& m : store.Machines()) {
    if (machine_ids.count(m.id) != 0) fleet.machines.push_back(m);
  }
  for (const db::ArtifactRecord& a : store.Artifacts()) {
    if (artifact_ids.count(a.id) != 0) fleet.artifacts.push_back(a);
  }
  fleet.tool_versions.assign(tools.begin(), tools.end());
  fleet.spec_versions.assign(specs.begin(), specs.end());
  return fleet;
}

}  // namespace dv::reports
