// detverify gate DB [--scenario NAME] [--expect FILE] [--junit FILE] [--summary FILE]: the CI
// gate (docs/ci.md). Exit 0 when every int8 configuration of each scenario ends on the same
// logits-chain and token-chain hashes (and on the --expect hashes when given), 1 otherwise with
// the disagreeing rows and their first divergent step, 2 for usage and I/O errors.
#include <cstdio>
#include <span>

#include "cli/command.h"
#include "db/run_store.h"
#include "engine/safetensors.h"
#include "reports/fleet_results.h"
#include "reports/gate.h"
#include "reports/gate_output.h"

namespace dv::cli {
namespace {

struct GateOptions {
  std::string db;
  std::string scenario;
  std::string expect;
  std::string junit;
  std::string summary;
};

void WriteText(const std::string& path, const std::string& text) {
  WriteFileAtomic(path, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

void RunGate(const GateOptions& o, CommandContext& ctx) {
  // Every input is read before anything is written: a bad --expect file leaves no JUnit file.
  std::vector<reports::ExpectEntry> expect;
  if (!o.expect.empty()) expect = reports::LoadExpectFile(o.expect);
  const db::RunStore store = db::RunStore::OpenReadOnly(o.db);
  const reports::FleetResults fleet = reports::LoadFleetResults(store, o.scenario);
  reports::GateOptions options;
  options.expect = o.expect.empty() ? nullptr : &expect;
  options.scenario_selected = !o.scenario.empty();
  const reports::GateResult gate = reports::EvaluateGate(fleet, options);
  if (!o.junit.empty()) WriteText(o.junit, reports::RenderJunitXml(gate));
  if (!o.summary.empty()) WriteText(o.summary, reports::RenderGateSummary(gate));
  const std::string text = reports::RenderGateText(gate);
  std::fwrite(text.data(), 1, text.size(), stdout);
  ctx.exit_code = gate.passed ? kExitOk : kExitVerdict;
}

}  // namespace

void SetupGateCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<GateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "gate", "CI gate: exit 0 when every int8 configuration agrees, 1 when not, 2 on errors");
  cmd->add_option("db", opt->db, "result DB (only read)")->required();
  cmd->add_option("--scenario", opt->scenario, "only this scenario (its name or an id prefix)");
  cmd->add_option("--expect", opt->expect, "JSON file of expected final hashes (docs/ci.md)");
  cmd->add_option("--junit", opt->junit, "write JUnit XML here (one testcase per configuration)");
  cmd->add_option("--summary", opt->summary, "write a Markdown job summary here (under 1 MB)");
  cmd->callback([opt, &ctx]() { RunGate(*opt, ctx); });
}

}  // namespace dv::cli
