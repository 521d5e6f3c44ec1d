// detverify run SCENARIO.yaml: every configuration in its own child process, results into
// SQLite, the run table at the end. The child side is the hidden `run-plan` verb
// (cli/run_plan_command.cc).
#include <cstdio>

#include "cli/command.h"
#include "harness/runner.h"
#include "harness/scenario.h"
#include "os/os_facts.h"

namespace dv::cli {
namespace {

struct RunOptions {
  std::string scenario;
  std::vector<std::string> configs;
  std::string db = "results.db";
  bool json = false;
  bool validate = false;
};

std::string SelfExe() {
  const std::string path = os::SelfExecutablePath();
  if (path.empty()) throw UsageError("cannot locate the detverify binary to run children with");
  return path;
}

void RunRun(const RunOptions& o, CommandContext& ctx) {
  if (o.validate) {
    const harness::Scenario s = harness::LoadScenario(o.scenario);
    std::printf("%s: valid (scenario '%s', %zu configurations)\n", o.scenario.c_str(),
                s.name.c_str(), s.configurations.size());
    ctx.exit_code = kExitOk;
    return;
  }
  harness::RunnerOptions ro;
  ro.scenario_path = o.scenario;
  ro.configs = o.configs;
  ro.db_path = o.db;
  ro.json = o.json;
  ro.self_exe = SelfExe();
  ctx.exit_code = harness::RunScenario(ro);
}

}  // namespace

void SetupRunCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "run a scenario's configurations and record their hashes");
  cmd->add_option("scenario", opt->scenario, "scenario YAML file")->required();
  cmd->add_option("--config", opt->configs, "run only this configuration (repeatable)");
  cmd->add_option("--db", opt->db, "result database")->capture_default_str();
  cmd->add_flag("--json", opt->json, "print the run table as JSON");
  cmd->add_flag("--validate", opt->validate, "check the scenario file and exit");
  cmd->callback([opt, &ctx]() { RunRun(*opt, ctx); });
}

}  // namespace dv::cli
