// detverify run-plan PLAN --result FILE (hidden): the child side of `detverify run`, in both
// binaries -- detverify for native rows, detverify-engine under qemu-user for emulated ones.
// It executes one run plan (plan/plan_executor.h) and writes the one result document.
#include "cli/command.h"
#include "plan/plan_executor.h"

namespace dv::cli {
namespace {

struct RunPlanOptions {
  std::string plan, result;
};

}  // namespace

void SetupRunPlanCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<RunPlanOptions>();
  CLI::App* cmd = app.add_subcommand("run-plan", "internal: execute one run plan (child process)");
  cmd->group("");  // hidden from --help
  cmd->add_option("plan", opt->plan, "the run plan (JSON) the parent wrote")->required();
  cmd->add_option("--result", opt->result, "where to write the result (JSON)")->required();
  cmd->callback([opt, &ctx]() { ctx.exit_code = plan::RunPlanChild(opt->plan, opt->result); });
}

}  // namespace dv::cli
