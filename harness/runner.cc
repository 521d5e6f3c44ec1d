#include "harness/runner.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>

#include "base/canonical_json.h"
#include "base/file_io.h"
#include "base/sha256.h"
#include "build_info.h"
#include "db/run_store.h"
#include "fingerprint/fingerprint.h"
#include "gguf/model_tokenizer.h"
#include "harness/emulated_platform.h"
#include "harness/plan_builder.h"
#include "harness/progress.h"
#include "harness/prompt_text.h"
#include "os/child_process.h"
#include "plan/plan_result.h"
#include "verdict/run_table.h"

namespace dv::harness {
namespace {

namespace fs = std::filesystem;

// A child's result file is one line per step (~140 bytes) for at most 2^20 steps.
constexpr size_t kMaxResultBytes = 512 * kMiB;

// UTC ISO-8601 with milliseconds: two executions of the same configuration are distinct runs.
std::string UtcNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03lldZ", buf, static_cast<long long>(ms));
  return out;
}

db::MachineRecord MachineOf(const nlohmann::json& fingerprint) {
  db::MachineRecord machine{"", CanonicalJson(fingerprint)};
  machine.id = db::ComputeMachineId(machine);
  return machine;
}

// Stage 1: the configurations asked for, in scenario order when none are named.
std::vector<const Configuration*> SelectConfigurations(const Scenario& scenario,
                                                       const std::vector<std::string>& names,
                                                       const std::string& path) {
  std::vector<const Configuration*> selected;
  if (names.empty()) {
    for (const Configuration& c : scenario.configurations) selected.push_back(&c);
    return selected;
  }
  for (const std::string& name : names) {
    const Configuration* c = scenario.Find(name);
    if (!c) {
      std::string known;
      for (const auto& k : scenario.configurations) known += (known.empty() ? "" : ", ") + k.name;
      throw ScenarioError(path + ": unknown configuration '" + name + "' (known: " + known + ")");
    }
    selected.push_back(c);
  }
  return selected;
}

// Stage 2 output: what every row of this run shares.
struct RunContext {
  ResolvedModel model;
  ResolvedPrompt prompt;
  db::ScenarioRecord scenario;
  db::MachineRecord machine;  // the parent's
  nlohmann::json fingerprint;
};

void PrintHeader(const Scenario& scenario, const RunContext& ctx, std::FILE* info) {
  const nlohmann::json& fp = ctx.fingerprint;
  const ResolvedModel& m = ctx.model;
  // The int8 rows' semantics: detllm-v1, or its Llama variant (docs/SPEC.md §9).
  std::fprintf(info, "detverify %s (spec %s, %s)  scenario %s\n", build::kToolVersion,
               m.artifact ? SpecVersionOf(m.artifact->weights().config) : build::kSpecVersion,
               build::kGitCommit, scenario.name.c_str());
  if (m.artifact) {
    std::fprintf(info, "artifact  %s  sha256 %s\n", m.source.c_str(), m.artifact->sha256().c_str());
  }
  if (m.checkpoint) {
    std::fprintf(info, "float     %s  sha256 %s\n", m.float_source.c_str(),
                 m.checkpoint_sha256.c_str());
  }
  std::fprintf(info, "machine   %s | %s | %s | %s\n", fp.value("cpu_model", "?").c_str(),
               fp.value("os", "?").c_str(), fp.value("compiler", "?").c_str(),
               fp.value("kernel", "?").c_str());
  std::vector<std::string> lines;  // the banner's, for each synthetic side
  if (m.artifact && m.synthetic) {
    lines.push_back(m.fallback_used ? "the artifact '" + scenario.model.artifact + "' is absent, so"
                                    : "this scenario names no artifact, so");
    lines.push_back("the int8 rows run the built-in " + m.source + ".");
  }
  if (m.checkpoint && m.float_synthetic) {
    lines.push_back(
        m.float_fallback_used
            ? "the checkpoint '" +
                  (scenario.model.gguf.empty() ? scenario.model.hf : scenario.model.gguf) +
                  "' is absent, so"
            : "this scenario names no float model, so");
    lines.push_back("the float rows run the built-in " + m.float_source + ".");
  }
  if (!lines.empty()) {
    lines.push_back("Hashes are not comparable with published values for real");
    lines.push_back("weights (they are recorded as synthetic).");
    std::fprintf(info,
                 "\n  ************************************************************************\n"
                 "  *  SYNTHETIC MODEL: %s\n",
                 lines.front().c_str());
    for (size_t i = 1; i < lines.size(); ++i) std::fprintf(info, "  *  %s\n", lines[i].c_str());
    std::fprintf(info,
                 "  ************************************************************************\n\n");
  }
  std::fflush(info);
}

// How a child ended, as a run row says it.
struct ChildOutcome {
  RunStatus status = RunStatus::kError;
  std::string detail;
  std::optional<plan::PlanResult> result;
};

// Stage 3: one plan in a child process: `run-plan PLAN --result FILE`, of this binary or, for an
// emulated platform, of its detverify-engine under qemu-user. The one result protocol either way.
ChildOutcome RunPlanInChild(const plan::RunPlan& plan, const std::string& self_exe,
                            Progress& progress) {
  const std::string text = plan::CanonicalPlanText(plan);
  const std::string plan_sha256 = Sha256Hex(text);
  const std::string base =
      (fs::temp_directory_path() / ("detverify-" + std::to_string(::getpid()) + "-" + plan.name))
          .string();
  const std::string plan_path = base + ".plan.json", result_path = base + ".result.json";
  std::error_code ignored;
  fs::remove(result_path, ignored);
  // A SIGTERM of the run removes these with the child's stderr file (os/child_process.h).
  os::RemoveOnTerminationSignal(plan_path);
  os::RemoveOnTerminationSignal(result_path);
  WriteFileAtomic(plan_path, text);

  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  if (plan.platform.empty()) {
    argv = {self_exe};
  } else {
    argv = EmulatorCommand(plan.platform);
    env.emplace_back("DETVERIFY_EMULATED", "1");
  }
  argv.insert(argv.end(), {"run-plan", plan_path, "--result", result_path});
  const os::ChildExit exit = os::RunChildProcess(
      argv, env, std::chrono::seconds(plan.timeout_s), base + ".err", [&](const std::string& line) {
        long long done = 0, total = 0;
        if (std::sscanf(line.c_str(), "progress %lld %lld", &done, &total) == 2) {
          progress.Step(done, total);
        }
      });
  ChildOutcome out;
  switch (exit.how) {
    case os::ChildExit::How::kTimedOut:
      out.status = RunStatus::kTimeout;
      out.detail = "no result within " + std::to_string(plan.timeout_s) + " s";
      break;
    case os::ChildExit::How::kSignaled:
      out.status = exit.signal == SIGKILL ? RunStatus::kKilled : RunStatus::kCrashed;
      out.detail = "signal " + std::to_string(exit.signal) + " (" + ::strsignal(exit.signal) + ")";
      break;
    case os::ChildExit::How::kExited:
      if (exit.exit_code != 0) {
        out.status = RunStatus::kError;
        out.detail = !exit.stderr_last.empty() ? exit.stderr_last
                                               : "exit code " + std::to_string(exit.exit_code);
        break;
      }
      try {
        out.result =
            plan::ParseResult(ReadFileBounded(result_path, kMaxResultBytes), plan, plan_sha256);
        out.status = RunStatus::kOk;
      } catch (const ExpectedError& e) {
        out.status = RunStatus::kError;
        out.detail = std::string("unreadable result from the child: ") + e.what();
      }
      break;
  }
  fs::remove(plan_path, ignored);
  fs::remove(result_path, ignored);
  os::ForgetOnTerminationSignal(plan_path);
  os::ForgetOnTerminationSignal(result_path);
  return out;
}

// A run killed by SIGKILL cannot remove its children's files: "detverify-<pid>-<name>.*" in the
// temp folder whose <pid> no longer exists are removed by the next run.
void RemoveFilesOfKilledRuns() {
  std::error_code error;
  const fs::path folder = fs::temp_directory_path(error);
  if (error) return;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    // Plan, result and stderr files, and the ".tmp.<pid>" of a result a child was writing.
    const bool ours = name.starts_with("detverify-") &&
                      (name.find(".plan.json") != std::string::npos ||
                       name.find(".result.json") != std::string::npos || name.ends_with(".err"));
    if (!ours) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + 10, &end, 10);
    if (pid <= 0 || end == nullptr || *end != '-' || os::ProcessExists(pid)) continue;
    std::error_code ignored;
    fs::remove(entry.path(), ignored);
  }
}

// Stage 3 for one configuration: plan it, run it (unless it cannot run here), and fill its row.
db::RunRecord RunConfiguration(const Scenario& scenario, const Configuration& c,
                               const RunContext& ctx, const std::string& self_exe,
                               Progress& progress) {
  const PlannedRun planned = PlanConfiguration(scenario, ctx.scenario.id, c, ctx.model, ctx.prompt);
  db::RunRecord run;
  run.scenario = ctx.scenario;
  run.machine = ctx.machine;
  run.artifact = ctx.model.Record(c.engine);
  run.configuration = c.name;
  run.engine = c.engine;
  run.backend = c.backend;
  run.started_at = UtcNow();
  run.tool_version = build::kToolVersion;
  run.spec_version = planned.plan.spec_version;
  run.config_json = plan::CanonicalPlanText(planned.plan);
  if (!planned.skip_reason.empty()) {
    run.status = RunStatus::kSkipped;
    run.status_detail = planned.skip_reason;
    return run;
  }
  if (!planned.error.empty()) {
    run.status = RunStatus::kError;
    run.status_detail = planned.error;
    return run;
  }
  const ChildOutcome out = RunPlanInChild(planned.plan, self_exe, progress);
  run.status = out.status;
  run.status_detail = out.detail;
  if (out.result) {
    const plan::PlanResult& r = *out.result;
    run.machine = MachineOf(r.fingerprint);  // the machine that computed the hashes
    run.wrap_events = r.wrap_events;
    for (size_t s = 0; s < r.steps.size(); ++s) {
      run.steps.push_back({static_cast<int64_t>(s), r.steps[s].token, r.steps[s].logits_chain,
                           r.steps[s].token_chain});
    }
    if (!run.steps.empty()) {
      run.final_logits_chain = run.steps.back().logits_chain;
      run.final_token_chain = run.steps.back().token_chain;
      run.step0_logits = r.step0_logits;
      run.tokens_per_s_milli =
          r.generate_ms > 0 ? static_cast<int64_t>(run.steps.size()) * 1000 * 1000 / r.generate_ms
                            : 0;
    }
  }
  run.n_steps = static_cast<int64_t>(run.steps.size());
  return run;
}

// generate.show_text: the generated text of each distinct token chain, decoded with the
// tokenizer the prompt was encoded with (else the model's), naming the rows that produced it.
void PrintTexts(const RunContext& ctx, const std::vector<db::RunRecord>& records) {
  std::string path = ctx.prompt.tokenizer_path;
  if (path.empty()) {
    path = !ctx.model.artifact && ctx.model.float_gguf
               ? ctx.model.checkpoint_dir
               : PromptTokenizerPath(ctx.model.TokenizerDir());
  }
  std::optional<gguf::ModelTokenizer> tokenizer;
  try {
    tokenizer.emplace(gguf::LoadModelTokenizer(path));
  } catch (const ExpectedError& e) {
    std::printf("generated text: not shown (%s)\n", e.what());
    return;
  }
  std::vector<std::pair<std::string, std::vector<const db::RunRecord*>>> chains;
  for (const db::RunRecord& r : records) {
    if (r.status != RunStatus::kOk || !r.final_token_chain) continue;
    auto it = std::find_if(chains.begin(), chains.end(),
                           [&](const auto& c) { return c.first == *r.final_token_chain; });
    if (it == chains.end()) {
      chains.push_back({*r.final_token_chain, {}});
      it = chains.end() - 1;
    }
    it->second.push_back(&r);
  }
  std::printf("\ngenerated text: %zu distinct token chain%s (tokenizer %s)\n", chains.size(),
              chains.size() == 1 ? "" : "s",
              std::filesystem::path(path).filename().string().c_str());
  for (const auto& [chain, rows] : chains) {
    std::string names;
    for (const db::RunRecord* r : rows) names += (names.empty() ? "" : ", ") + r->configuration;
    std::vector<int32_t> ids;
    for (const db::StepRecord& s : rows.front()->steps)
      ids.push_back(static_cast<int32_t>(s.token_id));
    std::string text = tokenizer->tokenizer.Decode(ids);
    // Indented, one line per line of text.
    std::string indented = "    ";
    for (char ch : text) {
      indented += ch;
      if (ch == '\n') indented += "    ";
    }
    std::printf("  token chain %.12s  %s\n%s\n", chain.c_str(), names.c_str(), indented.c_str());
  }
}

// Stage 4: the run table, as text or JSON.
void PrintTable(const Scenario& scenario, const RunContext& ctx,
                const std::vector<db::RunRecord>& records, const RunnerOptions& o) {
  const verdict::RunTable table = verdict::BuildRunTable(scenario.name, records, scenario.expect);
  if (o.json) {
    nlohmann::json j = verdict::RunTableJson(table);
    j["db"] = o.db_path;
    j["synthetic_model"] = ctx.model.synthetic;
    std::cout << j.dump(1) << "\n";
    return;
  }
  std::printf("\n%s", verdict::RenderRunTableText(table).c_str());
  if (scenario.show_text) PrintTexts(ctx, records);
  bool any_expect = false;
  for (const auto& e : scenario.expect) {
    any_expect |= ctx.model.artifact && ctx.model.artifact->sha256().rfind(e.artifact, 0) == 0;
  }
  if (!scenario.expect.empty() && !any_expect) {
    std::printf(
        "published hashes: none for this artifact (the scenario publishes them for %s...)\n",
        scenario.expect.front().artifact.c_str());
  }
  std::printf("results recorded in %s\n", o.db_path.c_str());
}

// Stage 2: everything the rows share, resolved once (a bad prompt fails here, early).
RunContext ResolveContext(const Scenario& scenario,
                          const std::vector<const Configuration*>& selected) {
  RunContext ctx;
  bool with_float = false;
  for (const Configuration* c : selected) with_float |= c->engine == EngineKind::kFloat;
  ctx.model = ResolveModel(scenario, with_float);
  ctx.prompt = ResolvePromptWithTokenizer(scenario, ctx.model);
  ctx.fingerprint = fingerprint::CollectFingerprint();
  ctx.machine = MachineOf(ctx.fingerprint);
  ctx.scenario = {"", scenario.name, CanonicalScenarioText(scenario)};
  ctx.scenario.id = db::ComputeScenarioId(ctx.scenario);
  return ctx;
}

// Stage 3 for configuration `i` of `n`: run it (timed), record its row in one transaction,
// report how it ended on the progress line.
db::RunRecord RunAndRecord(const Scenario& scenario, const Configuration& c, size_t i, size_t n,
                           const RunContext& ctx, const std::string& self_exe, db::RunStore& store,
                           Progress& progress) {
  progress.Start(i, n, c.name);
  const auto t0 = std::chrono::steady_clock::now();
  db::RunRecord run = RunConfiguration(scenario, c, ctx, self_exe, progress);
  run.wall_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  store.RecordRun(run);
  const std::string status(KindName(run.status));
  progress.Finish(run.status == RunStatus::kSkipped
                      ? "skipped: " + run.status_detail
                      : status + (run.status_detail.empty() ? "" : " (" + run.status_detail + ")"),
                  run.n_steps, run.wall_ms);
  return run;
}

}  // namespace

// scenario -> selected configurations -> DB -> shared context -> each row run and recorded ->
// the table (stage 4).
int RunScenario(const RunnerOptions& o) {
  const Scenario scenario = LoadScenario(o.scenario_path);
  const std::vector<const Configuration*> selected =
      SelectConfigurations(scenario, o.configs, o.scenario_path);

  // A SIGTERM/SIGINT/SIGHUP of the run takes the configuration child with it.
  os::KillChildOnTerminationSignals();
  RemoveFilesOfKilledRuns();
  // Open the DB first: a bad DB path fails before minutes of work.
  db::RunStore store = db::RunStore::Open(o.db_path);
  Progress progress(stderr);
  const RunContext ctx = ResolveContext(scenario, selected);
  PrintHeader(scenario, ctx, o.json ? stderr : stdout);

  int exit_code = kExitOk;
  std::vector<db::RunRecord> records;
  for (size_t i = 0; i < selected.size(); ++i) {
    records.push_back(
        RunAndRecord(scenario, *selected[i], i, selected.size(), ctx, o.self_exe, store, progress));
    const RunStatus status = records.back().status;
    if (status != RunStatus::kOk && status != RunStatus::kSkipped) exit_code = kExitVerdict;
  }
  PrintTable(scenario, ctx, records, o);
  return exit_code;
}

}  // namespace dv::harness
