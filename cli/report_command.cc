// detverify report DB --format md|html [-o FILE] [--scenario NAME]: the run tables of every
// scenario across every machine in a result DB, the machines' fingerprints and where float rows
// leave the int8 batch-1 row, as Markdown or as one self-contained HTML page.
#include <cstdio>
#include <span>

#include "cli/command.h"
#include "db/run_store.h"
#include "engine/safetensors.h"
#include "reports/fleet_results.h"
#include "reports/html_report.h"
#include "reports/markdown_report.h"

namespace dv::cli {
namespace {

struct ReportOptions {
  std::string db;
  std::string format = "md";
  std::string out;  // "" or "-": stdout
  std::string scenario;
};

void RunReport(const ReportOptions& o, CommandContext& ctx) {
  const db::RunStore store = db::RunStore::OpenReadOnly(o.db);
  const reports::FleetResults fleet = reports::LoadFleetResults(store, o.scenario);
  const std::string text =
      o.format == "html" ? reports::RenderHtmlReport(fleet) : reports::RenderMarkdownReport(fleet);
  if (o.out.empty() || o.out == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    WriteFileAtomic(o.out, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    std::fprintf(stderr, "report written to %s (%zu bytes)\n", o.out.c_str(), text.size());
  }
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupReportCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "write a Markdown or HTML report of a result DB");
  cmd->add_option("db", opt->db, "result DB (only read)")->required();
  cmd->add_option("--format", opt->format, "md or html")
      ->check(CLI::IsMember({"md", "html"}))
      ->capture_default_str();
  cmd->add_option("-o,--out", opt->out, "output file, written atomically (default: stdout)");
  cmd->add_option("--scenario", opt->scenario, "only this scenario (its name or an id prefix)");
  cmd->callback([opt, &ctx]() { RunReport(*opt, ctx); });
}

}  // namespace dv::cli
