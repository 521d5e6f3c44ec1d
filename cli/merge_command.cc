// detverify merge A.db B.db ... -o OUT.db: the union of several machines' result DBs. The inputs
// are only read and verified; an existing OUT receives the new rows in one transaction (so that
// `run --db OUT.db` and other merges into it may proceed meanwhile), a new OUT appears complete;
// a refused input (unknown schema version, conflicting duplicate, tampered row) leaves OUT as it
// was.
#include <cstdio>
#include <filesystem>

#include "cli/command.h"
#include "db/run_store.h"

namespace dv::cli {
namespace {

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string out;
};

void RunMerge(const MergeOptions& o, CommandContext& ctx) {
  const bool out_existed = std::filesystem::exists(o.out);
  const db::MergeSummary m = db::MergeDatabases(o.inputs, o.out);
  const std::string digest = db::ContentDigest(o.out, db::DigestScope::kResultsOnly);
  std::printf("merged %zu input%s into %s%s\n", o.inputs.size(), o.inputs.size() == 1 ? "" : "s",
              o.out.c_str(), out_existed ? " (its previous content kept)" : "");
  std::printf(
      "  %lld machines, %lld artifacts, %lld scenarios, %lld runs, %lld steps, %lld attestations\n",
      static_cast<long long>(m.machines), static_cast<long long>(m.artifacts),
      static_cast<long long>(m.scenarios), static_cast<long long>(m.runs),
      static_cast<long long>(m.steps), static_cast<long long>(m.attestations));
  std::printf("  results digest %s\n", digest.c_str());
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupMergeCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<MergeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "merge", "merge result DBs from several machines into one (idempotent, order-independent)");
  cmd->add_option("inputs", opt->inputs, "result DBs to merge (only read)")->required();
  cmd->add_option("-o,--out", opt->out,
                  "the merged DB; an existing one is one more input and gains the new rows in one "
                  "transaction")
      ->required();
  cmd->callback([opt, &ctx]() { RunMerge(*opt, ctx); });
}

}  // namespace dv::cli
