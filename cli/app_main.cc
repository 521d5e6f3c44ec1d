#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "build_info.h"
#include "cli/command.h"

namespace dv::cli {
namespace {

// Messages are one line; a stray newline inside one must not break that.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace

void ConfigureApp(CLI::App& app) {
  app.require_subcommand(1);
  // Usage errors in the same one-line form as every other failure.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "detverify: " + std::string(e.what()) + " (see --help)\n";
  });
  app.set_version_flag("--version", std::string(build::kToolVersion) + " (spec " +
                                        build::kSpecVersion + ", " + build::kGitCommit + ")");
}

// The two error channels meet here (base/expected_error.h): an expected failure exits with the
// code it carries; anything else is a bug in detverify and must never look like a bad input.
int RunApp(CLI::App& app, const CommandContext& ctx, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitError;
  } catch (const ExpectedError& e) {
    std::fprintf(stderr, "detverify: %s\n", OneLine(e.what()).c_str());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "detverify: internal error: out of memory\n");
    return kExitInternal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "detverify: internal error: %s (please report this)\n",
                 OneLine(e.what()).c_str());
    return kExitInternal;
  } catch (...) {
    std::fprintf(stderr, "detverify: internal error: an unknown exception (please report this)\n");
    return kExitInternal;
  }
  return ctx.exit_code;
}

}  // namespace dv::cli
