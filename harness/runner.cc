#include "harness/runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/process.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "build_info.h"
#include "db/run_store.h"
#include "engine/backends/backend_registry.h"
#include "base/file_io.h"
#include "base/canonical_json.h"
#include "harness/config_runner.h"
#include "harness/emulated_platform.h"
#include "fingerprint/fingerprint.h"
#include "harness/progress.h"
#include "verdict/run_table.h"

namespace dv::harness {
namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;

// UTC ISO-8601 with milliseconds: two executions of the same configuration are distinct runs.
std::string UtcNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03lldZ", buf, static_cast<long long>(ms));
  return out;
}

std::string ConfigJson(const Configuration& c) {
  nlohmann::json j = {{"name", c.name}, {"engine", c.engine}, {"backend", c.backend}, {"dtype", c.dtype},
                      {"batch", {{"size", c.batch.size}, {"co_prompts", c.batch.co_prompts}, {"position", c.batch.position}}},
                      {"split_prefill", c.split_prefill}, {"cuda_graphs", c.cuda_graphs}, {"threads", c.threads}};
  if (!c.platform.empty()) j["platform"] = c.platform;
  return CanonicalJson(j);
}

std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  const std::string prefix = "detverify: ";
  if (last.rfind(prefix, 0) == 0) last = last.substr(prefix.size());
  return last.substr(0, 300);
}

// Why a configuration is not run on this machine/build, or "" when it can run.
std::string SkipReason(const Configuration& c) {
  if (c.engine == "float") return "the float contrast engine is not part of this build";
  if (!BackendAvailable(c.backend)) {
    if (c.backend == "cuda") return "no CUDA backend on this machine (no GPU or not built)";
    return "backend " + c.backend + " is not available in this build";
  }
  if (!c.platform.empty()) return EmulationSkipReason(c);
  return "";
}

struct ChildResult {
  std::string status = "error";
  std::string detail;
  std::vector<StepHashes> steps;
  int64_t generate_ms = 0;
  int64_t wrap_events = 0;
  std::optional<db::MachineRecord> machine;  // the child's own (emulated rows); else the parent's
};

// Fills `out` (steps, timings, machine) from a child that exited 0, given its standard output
// without the progress lines. Throws on an unreadable result.
using ResultReader = std::function<void(const std::string& stdout_text, ChildResult& out)>;

// Where a child of this process for configuration `c` keeps its files (+ ".json", + ".err").
std::string ChildFileBase(const Configuration& c) {
  return (fs::temp_directory_path() / ("detverify-" + std::to_string(::getpid()) + "-" + c.name)).string();
}

// Launches `argv` for one configuration (DETVERIFY_EMULATED=1 added to its environment when
// `emulated`), relays its "progress N M" lines, enforces the timeout, and classifies how it ended.
ChildResult RunChild(const std::vector<std::string>& argv, bool emulated, const Configuration& c,
                     Progress& progress, const ResultReader& read_result) {
  const std::string err_path = ChildFileBase(c) + ".err";
  ChildResult out;
  const std::vector<std::string> args(argv.begin() + 1, argv.end());
  bp::environment env = boost::this_process::environment();
  if (emulated) env["DETVERIFY_EMULATED"] = "1";
  bp::ipstream child_out;
  bp::child child(argv.front(), bp::args(args), env, bp::std_out > child_out, bp::std_err > err_path,
                  bp::std_in < bp::null);
  std::string stdout_text;
  std::thread reader([&] {
    std::string line;
    while (std::getline(child_out, line)) {
      long long done = 0, total = 0;
      if (std::sscanf(line.c_str(), "progress %lld %lld", &done, &total) == 2) {
        progress.Step(done, total);
      } else {
        stdout_text += line + "\n";
      }
    }
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(c.timeout_s);
  bool timed_out = false;
  while (child.running()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      child.terminate();  // SIGKILL
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  child.wait();
  reader.join();
  const int raw = child.native_exit_code();
  if (timed_out) {
    out.status = "timeout";
    out.detail = "no result within " + std::to_string(c.timeout_s) + " s";
  } else if (WIFSIGNALED(raw)) {
    const int sig = WTERMSIG(raw);
    out.status = sig == SIGKILL ? "killed" : "crashed";
    out.detail = std::string("signal ") + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  } else if (WIFEXITED(raw) && WEXITSTATUS(raw) == 0) {
    try {
      read_result(stdout_text, out);
      out.status = "ok";
    } catch (const std::exception& e) {
      out.status = "error";
      out.detail = std::string("unreadable result from the child: ") + e.what();
    }
  } else {
    out.status = "error";
    out.detail = LastLine(err_path);
    if (out.detail.empty()) out.detail = "exit code " + std::to_string(WIFEXITED(raw) ? WEXITSTATUS(raw) : raw);
  }
  fs::remove(err_path);
  return out;
}

// `detverify run-config` of this binary; it writes its steps to a result file.
ChildResult RunNativeChild(const RunnerOptions& o, const Configuration& c, Progress& progress) {
  const std::string result_path = ChildFileBase(c) + ".json";
  fs::remove(result_path);
  ChildResult out = RunChild({o.self_exe, "run-config", o.scenario_path, "--config", c.name, "--result", result_path},
                             false, c, progress, [&](const std::string&, ChildResult& r) {
                               const auto j = nlohmann::json::parse(std::ifstream(result_path));
                               r.generate_ms = j.at("generate_ms").get<int64_t>();
                               r.wrap_events = j.at("wrap_events").get<int64_t>();
                               for (const auto& s : j.at("steps")) {
                                 r.steps.push_back({s.at(0).get<int32_t>(), s.at(1).get<std::string>(), s.at(2).get<std::string>()});
                               }
                             });
  fs::remove(result_path);
  return out;
}

// The platform's detverify-engine under qemu-user (emulated_platform.h); it prints its steps and
// fingerprint as JSON, and that fingerprint becomes the run's machine.
ChildResult RunEmulatedChild(const Scenario& scenario, const Configuration& c, const ResolvedModel& model,
                             const std::vector<int32_t>& prompt, Progress& progress) {
  const std::string artifact_sha256 = model.artifact->sha256();
  return RunChild(EmulatedCommand(scenario, c, model, prompt), true, c, progress,
                  [&](const std::string& text, ChildResult& out) {
                    const EmulatedOutcome e = ParseEmulatedOutput(text, c, artifact_sha256);
                    for (const StepHashes& s : e.outcome.steps) out.steps.push_back(s);
                    out.generate_ms = e.outcome.generate_ms;
                    out.wrap_events = e.outcome.wrap_events;
                    db::MachineRecord machine{"", CanonicalJson(e.fingerprint)};
                    machine.id = db::ComputeMachineId(machine);
                    out.machine = machine;
                  });
}

}  // namespace

int RunScenario(const RunnerOptions& o) {
  const Scenario scenario = LoadScenario(o.scenario_path);
  std::vector<const Configuration*> selected;
  if (o.configs.empty()) {
    for (const Configuration& c : scenario.configurations) selected.push_back(&c);
  } else {
    for (const std::string& name : o.configs) {
      const Configuration* c = scenario.Find(name);
      if (!c) {
        std::string known;
        for (const auto& k : scenario.configurations) known += (known.empty() ? "" : ", ") + k.name;
        throw ScenarioError(o.scenario_path + ": unknown configuration '" + name + "' (known: " + known + ")");
      }
      selected.push_back(c);
    }
  }

  // Open the DB first: a bad DB path fails before minutes of work.
  db::RunStore store = db::RunStore::Open(o.db_path);
  Progress progress(stderr);
  const ResolvedModel model = ResolveModel(scenario);
  const std::vector<int32_t> prompt = ResolvePrompt(scenario, *model.artifact);  // fail early on a bad prompt
  const nlohmann::json fp = fingerprint::CollectFingerprint();
  db::MachineRecord machine{"", CanonicalJson(fp)};
  machine.id = db::ComputeMachineId(machine);
  db::ArtifactRecord artifact{model.artifact->sha256(), model.source, model.synthetic, model.artifact->config_sha256()};
  db::ScenarioRecord scen{"", scenario.name, CanonicalScenarioText(scenario)};
  scen.id = db::ComputeScenarioId(scen);

  std::FILE* info = o.json ? stderr : stdout;
  std::fprintf(info, "detverify %s (spec %s, %s)  scenario %s\n", build::kToolVersion, build::kSpecVersion,
               build::kGitCommit, scenario.name.c_str());
  std::fprintf(info, "artifact  %s  sha256 %s\n", model.source.c_str(), model.artifact->sha256().c_str());
  std::fprintf(info, "machine   %s | %s | %s | %s\n", fp.value("cpu_model", "?").c_str(), fp.value("os", "?").c_str(),
               fp.value("compiler", "?").c_str(), fp.value("kernel", "?").c_str());
  if (model.synthetic) {
    const std::string why = model.fallback_used ? "the artifact '" + scenario.model.artifact + "' is absent, so this run uses"
                                                : "this scenario names no artifact and uses";
    std::fprintf(info,
                 "\n  ************************************************************************\n"
                 "  *  SYNTHETIC MODEL: %s\n"
                 "  *  the built-in %s. Hashes are not comparable with\n"
                 "  *  published values for real weights (they are recorded as synthetic).\n"
                 "  ************************************************************************\n\n",
                 why.c_str(), model.source.c_str());
  }
  std::fflush(info);

  int exit_code = 0;
  std::vector<db::RunRecord> records;
  for (size_t i = 0; i < selected.size(); ++i) {
    const Configuration& c = *selected[i];
    db::RunRecord run;
    run.scenario = scen;
    run.machine = machine;
    run.artifact = artifact;
    run.configuration = c.name;
    run.engine = c.engine;
    run.backend = c.backend;
    run.started_at = UtcNow();
    run.tool_version = build::kToolVersion;
    run.spec_version = build::kSpecVersion;
    run.config_json = ConfigJson(c);
    progress.Start(i, selected.size(), c.name);
    const auto t0 = std::chrono::steady_clock::now();
    if (const std::string why = SkipReason(c); !why.empty()) {
      run.status = "skipped";
      run.status_detail = why;
    } else {
      ChildResult r = c.platform.empty() ? RunNativeChild(o, c, progress)
                                         : RunEmulatedChild(scenario, c, model, prompt, progress);
      if (r.machine) run.machine = *r.machine;
      run.status = r.status;
      run.status_detail = r.detail;
      run.wrap_events = r.wrap_events;
      for (size_t s = 0; s < r.steps.size(); ++s) {
        run.steps.push_back({static_cast<int64_t>(s), r.steps[s].token, r.steps[s].logits_chain, r.steps[s].token_chain});
      }
      if (!run.steps.empty()) {
        run.final_logits_chain = run.steps.back().logits_chain;
        run.final_token_chain = run.steps.back().token_chain;
        run.tokens_per_s_milli = r.generate_ms > 0 ? static_cast<int64_t>(run.steps.size()) * 1000 * 1000 / r.generate_ms : 0;
      }
      run.n_steps = static_cast<int64_t>(run.steps.size());
      if (run.status != "ok") exit_code = 1;
    }
    run.wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    store.RecordRun(run);
    progress.Finish(run.status == "skipped" ? "skipped: " + run.status_detail
                                            : run.status + (run.status_detail.empty() ? "" : " (" + run.status_detail + ")"),
                    run.n_steps, run.wall_ms);
    records.push_back(std::move(run));
  }

  const verdict::RunTable table = verdict::BuildRunTable(scenario.name, records, scenario.expect);
  if (o.json) {
    nlohmann::json j = verdict::RunTableJson(table);
    j["db"] = o.db_path;
    j["synthetic_model"] = model.synthetic;
    std::cout << j.dump(1) << "\n";
  } else {
    std::printf("\n%s", verdict::RenderRunTableText(table).c_str());
    bool any_expect = false;
    for (const auto& e : scenario.expect) any_expect |= model.artifact->sha256().rfind(e.artifact, 0) == 0;
    if (!scenario.expect.empty() && !any_expect) {
      std::printf("published hashes: none for this artifact (the scenario publishes them for %s...)\n",
                  scenario.expect.front().artifact.c_str());
    }
    std::printf("results recorded in %s\n", o.db_path.c_str());
  }
  return exit_code;
}

int RunConfigurationChild(const std::string& scenario_path, const std::string& config_name,
                          const std::string& result_path) {
  const Scenario scenario = LoadScenario(scenario_path);
  const Configuration* c = scenario.Find(config_name);
  if (!c) throw ScenarioError(scenario_path + ": unknown configuration '" + config_name + "'");
  // Test-only fault injection: DETVERIFY_FAULT=crash:<config>,hang:<config>,... makes that
  // configuration's child abort or hang at its second step.
  std::string fault;
  if (const char* f = std::getenv("DETVERIFY_FAULT")) fault = std::string(",") + f + ",";
  const bool crash = fault.find(",crash:" + config_name + ",") != std::string::npos;
  const bool hang = fault.find(",hang:" + config_name + ",") != std::string::npos;
  const ResolvedModel model = ResolveModel(scenario);
  const ConfigOutcome out = RunConfigurationInProcess(scenario, *c, model, [&](int64_t done, int64_t total) {
    std::printf("progress %lld %lld\n", static_cast<long long>(done), static_cast<long long>(total));
    std::fflush(stdout);
    if (done == 2 && crash) std::abort();
    if (done == 2 && hang) {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  nlohmann::json j;
  j["generate_ms"] = out.generate_ms;
  j["wrap_events"] = out.wrap_events;
  j["steps"] = nlohmann::json::array();
  for (const StepHashes& s : out.steps) j["steps"].push_back({s.token, s.logits_chain, s.token_chain});
  const std::string text = j.dump();
  WriteFileAtomic(result_path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  return 0;
}

}  // namespace dv::harness
