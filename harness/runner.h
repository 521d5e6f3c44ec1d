// The scenario runner: every configuration resolved into a run plan (plan_builder.h), run in its
// own child process with a timeout (`run-plan`, native or under qemu-user), its outcome recorded
// by the parent in one DB transaction, the run table at the end.
#pragma once

#include <string>
#include <vector>

namespace dv::harness {

struct RunnerOptions {
  std::string scenario_path;
  std::vector<std::string> configs;  // empty: all
  std::string db_path = "results.db";
  bool json = false;     // print the table as JSON on stdout
  std::string self_exe;  // the detverify binary to launch children with
};

// Exit code: 0 when every selected configuration ran (ok or skipped), 1 when one crashed, timed
// out, was killed or failed. Throws ScenarioError / DbError / ArtifactError for usage and I/O
// problems (exit 2 in main).
int RunScenario(const RunnerOptions& options);

}  // namespace dv::harness
