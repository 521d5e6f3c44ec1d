// detverify: one subcommand per user verb (DESIGN.md §1). Expected failures print one line,
// "detverify: <file>: <problem>", and exit 2; a negative verdict exits 1.
#include <cstdio>
#include <exception>
#include <string>

#include "build_info.h"
#include "cli/command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "detverify: bit-reproducible integer inference for Qwen3, and the harness that proves it"};
  app.require_subcommand(1);
  // Usage errors in the same one-line form as every other failure.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "detverify: " + std::string(e.what()) + " (see --help)\n";
  });
  app.set_version_flag("--version", std::string(dv::build::kToolVersion) + " (spec " +
                                        dv::build::kSpecVersion + ", " + dv::build::kGitCommit +
                                        ")");
  dv::cli::CommandContext ctx;
  dv::cli::SetupGenerateCommand(app, ctx);
  dv::cli::SetupSynthCommand(app, ctx);
  dv::cli::SetupBenchCommand(app, ctx);
  dv::cli::SetupRunCommand(app, ctx);
  dv::cli::SetupFingerprintCommand(app, ctx);
  dv::cli::SetupMergeCommand(app, ctx);
  dv::cli::SetupReportCommand(app, ctx);
  dv::cli::SetupGateCommand(app, ctx);
  dv::cli::SetupAttestCommand(app, ctx);
  dv::cli::SetupTokenizeCommand(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : dv::cli::kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "detverify: %s\n", e.what());
    return dv::cli::kExitError;
  }
  return ctx.exit_code;
}
