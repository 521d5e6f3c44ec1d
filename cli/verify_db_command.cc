// detverify verify-db FILE...: checks result DBs the way every reader does before it trusts one
// (db/verify.h) plus SQLite's own PRAGMA integrity_check and foreign_key_check. Exit 0 when
// every file passes, 2 with one line naming the file, the run and the problem otherwise.
#include <cstdio>

#include "cli/command.h"
#include "db/run_store.h"

namespace dv::cli {
namespace {

struct VerifyDbOptions {
  std::vector<std::string> files;
};

void RunVerifyDb(const VerifyDbOptions& o, CommandContext& ctx) {
  for (const std::string& file : o.files) {
    const db::VerifySummary s = db::VerifyDatabase(file);
    std::printf(
        "%s: ok (integrity_check ok; %lld runs, %lld steps, %lld machines, %lld artifacts, "
        "%lld scenarios, %lld attestations verified)\n",
        file.c_str(), static_cast<long long>(s.runs), static_cast<long long>(s.steps),
        static_cast<long long>(s.machines), static_cast<long long>(s.artifacts),
        static_cast<long long>(s.scenarios), static_cast<long long>(s.attestations));
  }
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupVerifyDbCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<VerifyDbOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify-db",
      "check result DBs for tampering and inconsistency (and SQLite integrity); exit 2 on the "
      "first problem");
  cmd->add_option("files", opt->files, "result DBs (only read)")->required();
  cmd->callback([opt, &ctx]() { RunVerifyDb(*opt, ctx); });
}

}  // namespace dv::cli
