// The shape every subcommand file follows: Setup<Verb>Command registers the subcommand and its
// options on the app; its callback runs the verb and stores the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "base/expected_error.h"

namespace dv::cli {

// Exit codes (kExitOk, kExitVerdict, kExitError, kExitInternal) are base/expected_error.h's.

// A usage error the user can fix; main prints "detverify: <what>" and exits kExitError.
class UsageError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
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
void SetupRunPlanCommand(CLI::App& app, CommandContext& ctx);
void SetupFingerprintCommand(CLI::App& app, CommandContext& ctx);
void SetupMergeCommand(CLI::App& app, CommandContext& ctx);
void SetupVerifyDbCommand(CLI::App& app, CommandContext& ctx);
void SetupReportCommand(CLI::App& app, CommandContext& ctx);
void SetupGateCommand(CLI::App& app, CommandContext& ctx);
void SetupAttestCommand(CLI::App& app, CommandContext& ctx);
void SetupTokenizeCommand(CLI::App& app, CommandContext& ctx);
void SetupGgufInfoCommand(CLI::App& app, CommandContext& ctx);
void SetupPrepareCommand(CLI::App& app, CommandContext& ctx);
void SetupCompareCommand(CLI::App& app, CommandContext& ctx);
void SetupPplCommand(CLI::App& app, CommandContext& ctx);

}  // namespace dv::cli
