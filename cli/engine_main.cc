// detverify-engine: the engine's verbs alone (generate with token ids, synth, fingerprint), with
// no yaml-cpp, SQLite, Boost or ICU behind them. The cross-ISA build (scripts/cross_test.sh)
// produces it for aarch64 and s390x, and `detverify run` launches it under qemu-user for
// configurations with a `platform` key. Exit codes and error lines are detverify's.
#include <cstdio>
#include <exception>

#include "build_info.h"
#include "cli/command.h"

int main(int argc, char** argv) {
  CLI::App app{"detverify-engine: detverify's integer engine verbs, without the harness"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(dv::build::kToolVersion) + " (spec " +
                                        dv::build::kSpecVersion + ", " + dv::build::kGitCommit +
                                        ")");
  dv::cli::CommandContext ctx;
  dv::cli::SetupGenerateCommand(app, ctx);
  dv::cli::SetupSynthCommand(app, ctx);
  dv::cli::SetupFingerprintCommand(app, ctx);
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
