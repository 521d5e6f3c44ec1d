// The scenario runner: every configuration in its own child process with a timeout, results
// recorded by the parent, one DB transaction per finished run, the run table at the end.
#pragma once

#include <string>
#include <vector>

namespace dv::harness {

struct RunnerOptions {
  std::string scenario_path;
  std::vector<std::string> configs;  // empty: all
  std::string db_path = "results.db";
  bool json = false;                 // print the table as JSON on stdout
  std::string self_exe;              // the detverify binary to launch children with
};

// Exit code: 0 when every selected configuration ran (ok or skipped), 1 when one crashed, timed
// out, was killed or failed. Throws ScenarioError / DbError / ArtifactError for usage and I/O
// problems (exit 2 in main).
int RunScenario(const RunnerOptions& options);

// The child side: runs one configuration and writes its outcome as JSON to result_path.
// Progress lines "progress <done> <total>" go to stdout. Returns the process exit code.
int RunConfigurationChild(const std::string& scenario_path, const std::string& config_name,
                          const std::string& result_path);

}  // namespace dv::harness
