// The shape every subcommand file follows: Setup<Verb>Command registers the subcommand and its
// options on the app; its callback runs the verb and stores the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <stdexcept>
#include <string>

namespace dv::cli {

// Exit codes: 0 success, 1 a negative verdict (disagreeing hashes, failed verification),
// 2 usage or I/O errors (the diffoscope convention).
inline constexpr int kExitOk = 0;
inline constexpr int kExitVerdict = 1;
inline constexpr int kExitError = 2;

// An expected failure the user can fix; main prints "detverify: <what>" and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CommandContext {
  int exit_code = kExitOk;
};

// The shared frame of both binaries (cli/app_main.cc): one subcommand required, --version, usage
// errors as one "detverify: ..." line; RunApp parses, runs the chosen verb and returns the exit
// code (a verb's exception becomes one line and kExitError).
void ConfigureApp(CLI::App& app);
int RunApp(CLI::App& app, const CommandContext& ctx, int argc, char** argv);

void SetupGenerateCommand(CLI::App& app, CommandContext& ctx);
void SetupSynthCommand(CLI::App& app, CommandContext& ctx);
void SetupBenchCommand(CLI::App& app, CommandContext& ctx);
void SetupRunCommand(CLI::App& app, CommandContext& ctx);
void SetupFingerprintCommand(CLI::App& app, CommandContext& ctx);
void SetupMergeCommand(CLI::App& app, CommandContext& ctx);
void SetupReportCommand(CLI::App& app, CommandContext& ctx);
void SetupGateCommand(CLI::App& app, CommandContext& ctx);
void SetupAttestCommand(CLI::App& app, CommandContext& ctx);
void SetupTokenizeCommand(CLI::App& app, CommandContext& ctx);
void SetupGgufInfoCommand(CLI::App& app, CommandContext& ctx);

}  // namespace dv::cli
