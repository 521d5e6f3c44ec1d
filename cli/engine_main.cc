// detverify-engine: the engine's verbs alone (generate with token ids, synth, prepare with token
// ids or statistics, fingerprint, and the hidden run-plan), with no yaml-cpp, SQLite, Boost or
// ICU behind them. The cross-ISA build (scripts/cross_test.sh) produces it for aarch64 and s390x,
// and `detverify run` launches its run-plan under qemu-user for configurations with a `platform`
// key. Exit codes and error lines are detverify's.
#include "cli/command.h"

int main(int argc, char** argv) {
  CLI::App app{"detverify-engine: detverify's integer engine verbs, without the harness"};
  dv::cli::ConfigureApp(app);
  dv::cli::CommandContext ctx;
  dv::cli::SetupGenerateCommand(app, ctx);
  dv::cli::SetupSynthCommand(app, ctx);
  dv::cli::SetupPrepareCommand(app, ctx);
  dv::cli::SetupFingerprintCommand(app, ctx);
  dv::cli::SetupRunPlanCommand(app, ctx);
  return dv::cli::RunApp(app, ctx, argc, argv);
}
