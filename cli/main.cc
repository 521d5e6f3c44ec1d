// detverify: one subcommand per user verb (DESIGN.md §1). Expected failures print one line,
// "detverify: <file>: <problem>", and exit 2; a negative verdict exits 1.
#include "cli/command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "detverify: bit-reproducible integer inference for Qwen3, and the harness that proves it"};
  dv::cli::ConfigureApp(app);
  dv::cli::CommandContext ctx;
  dv::cli::SetupGenerateCommand(app, ctx);
  dv::cli::SetupSynthCommand(app, ctx);
  dv::cli::SetupPrepareCommand(app, ctx);
  dv::cli::SetupCompareCommand(app, ctx);
  dv::cli::SetupPplCommand(app, ctx);
  dv::cli::SetupBenchCommand(app, ctx);
  dv::cli::SetupRunCommand(app, ctx);
  dv::cli::SetupRunPlanCommand(app, ctx);
  dv::cli::SetupFingerprintCommand(app, ctx);
  dv::cli::SetupMergeCommand(app, ctx);
  dv::cli::SetupVerifyDbCommand(app, ctx);
  dv::cli::SetupReportCommand(app, ctx);
  dv::cli::SetupGateCommand(app, ctx);
  dv::cli::SetupAttestCommand(app, ctx);
  dv::cli::SetupTokenizeCommand(app, ctx);
  dv::cli::SetupGgufInfoCommand(app, ctx);
  return dv::cli::RunApp(app, ctx, argc, argv);
}
