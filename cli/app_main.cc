#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
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

namespace {

// Everything a verb printed must have reached its destination: a full disk (> /dev/full) or a
// reader that went away (a closed pipe) is an error like any other, not a silent success.
int FlushStandardOutput(int exit_code) {
  errno = 0;
  if (std::fflush(stdout) == 0 && std::ferror(stdout) == 0) return exit_code;
  const int err = errno;
  std::fprintf(stderr, "detverify: standard output: write failed: %s\n",
               err != 0 ? std::strerror(err) : "I/O error");
  return kExitError;
}

}  // namespace

// The two error channels meet here (base/expected_error.h): an expected failure exits with the
// code it carries; anything else is a bug in detverify and must never look like a bad input.
int RunApp(CLI::App& app, const CommandContext& ctx, int argc, char** argv) {
  // A closed pipe becomes EPIPE on the write (reported above) rather than a silent death by
  // SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return FlushStandardOutput(rc == 0 ? kExitOk : kExitError);
  } catch (const ExpectedError& e) {
    std::fflush(stdout);
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
  return FlushStandardOutput(ctx.exit_code);
}

}  // namespace dv::cli
