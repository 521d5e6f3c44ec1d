#include <cstdio>
#include <exception>
#include <string>

#include "build_info.h"
#include "cli/command.h"

namespace dv::cli {

void ConfigureApp(CLI::App& app) {
  app.require_subcommand(1);
  // Usage errors in the same one-line form as every other failure.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "detverify: " + std::string(e.what()) + " (see --help)\n";
  });
  app.set_version_flag("--version", std::string(build::kToolVersion) + " (spec " +
                                        build::kSpecVersion + ", " + build::kGitCommit + ")");
}

int RunApp(CLI::App& app, const CommandContext& ctx, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "detverify: %s\n", e.what());
    return kExitError;
  }
  return ctx.exit_code;
}

}  // namespace dv::cli
