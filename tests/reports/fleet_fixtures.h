// Shared by the tests of the fleet verbs (report, gate, merge, attest): scratch directories,
// running the detverify binary, and result DBs built from records whose chains leave a baseline
// at chosen steps. Header-only; the test target defines DETVERIFY_BIN when it runs the binary.
#pragma once

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/run_store.h"
#include "tests/support/scratch_files.h"

namespace dv::fleet_testing {

using test_files::ReadFile;
using test_files::ScratchDir;
using test_files::WriteFile;

struct CommandResult {
  int code = -1;  // exit status; -1 when the process did not exit normally (a crash)
  std::string out, err;
};

// In a forked child: becomes `binary` with `args` (no shell); exit 127 when exec fails.
[[noreturn]] inline void ExecProgram(const std::string& binary,
                                     const std::vector<std::string>& args) {
  std::vector<std::string> copy = args;
  std::string bin = binary;
  std::vector<char*> argv{bin.data()};
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(bin.c_str(), argv.data());
  ::_exit(127);
}

// Starts `binary` with `args`, its stdin, stdout and stderr on the given descriptors (each -1:
// /dev/null) and in `cwd` when given; returns its pid.
inline pid_t StartProgram(const std::string& binary, const std::vector<std::string>& args,
                          int in_fd, int out_fd, int err_fd, const std::string& cwd = "") {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    if (null < 0) ::_exit(126);
    ::dup2(in_fd >= 0 ? in_fd : null, 0);
    ::dup2(out_fd >= 0 ? out_fd : null, 1);
    ::dup2(err_fd >= 0 ? err_fd : null, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ExecProgram(binary, args);
  }
  return pid;
}

// Waits for `pid`: its exit status, or -N when signal N ended it.
inline int WaitProgram(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -(WIFSIGNALED(status) ? WTERMSIG(status) : 1);
}

// Runs `binary` with `args` (no shell), stdin from /dev/null, capturing stdout and stderr.
inline CommandResult RunProgram(const std::string& binary, const std::vector<std::string>& args,
                                const std::string& cwd = "") {
  static std::atomic<int> counter{0};
  const std::string base =
      (std::filesystem::temp_directory_path() /
       ("detverify-fleet-cmd-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)))
          .string();
  const std::string out_path = base + ".out", err_path = base + ".err";
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (out < 0 || err < 0) throw std::runtime_error("cannot create " + base + ".out/.err");
  const pid_t pid = StartProgram(binary, args, -1, out, err, cwd);
  ::close(out);
  ::close(err);
  CommandResult r;
  r.code = WaitProgram(pid);
  if (r.code < 0) r.code = -1;  // a crash
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return r;
}

// Runs `sql` on `path` through a plain SQLite connection (for altering files behind detverify).
inline void RunSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    throw std::runtime_error("cannot open " + path);
  }
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error("sql on " + path + ": " + message);
}

#ifdef DETVERIFY_BIN
inline CommandResult Detverify(const std::vector<std::string>& args, const std::string& cwd = "") {
  return RunProgram(DETVERIFY_BIN, args, cwd);
}
#endif

inline std::string SourceDir() {
  const char* dir = std::getenv("DETVERIFY_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

// The number of lines in `text` (a last line without a newline counts).
inline size_t LineCount(const std::string& text) {
  size_t n = 0;
  for (const char c : text) n += c == '\n' ? 1 : 0;
  return n + (!text.empty() && text.back() != '\n' ? 1 : 0);
}

// ---- Records -------------------------------------------------------------------------------

inline db::ScenarioRecord MakeScenario(const std::string& name, int64_t max_new) {
  const nlohmann::json text = {
      {"name", name}, {"max_new", max_new}, {"expect", nlohmann::json::array()}};
  return db::ScenarioRecord{"", name, text.dump()};
}

inline db::MachineRecord MakeMachine(const std::string& cpu_model) {
  const nlohmann::json fp = {{"fingerprint_version", 1},
                             {"cpu_model", cpu_model},
                             {"arch", "x86_64"},
                             {"byte_order", "little"},
                             {"emulated", false},
                             {"isa", {{"avx2", true}, {"avx512f", false}}},
                             {"logical_cores", 16},
                             {"memory_bytes", int64_t{68719476736}},
                             {"os", "Debian GNU/Linux 12 (bookworm)"},
                             {"kernel", "6.1.0"},
                             {"compiler", "GNU 12.2.0"},
                             {"cxx_flags", "-O3"},
                             {"build_type", "Release"},
                             {"tool_version", "0.1.0"},
                             {"spec_version", "detllm-v1"},
                             {"git_commit", "0000000"},
                             {"gpu", nullptr}};
  return db::MachineRecord{"", fp.dump()};
}

inline db::ArtifactRecord MakeArtifact(const std::string& source = "synthetic:qwen3-tiny seed=0") {
  return db::ArtifactRecord{dv::Sha256Hex("model.safetensors of " + source), source, true,
                            dv::Sha256Hex("config.json")};
}

// `n` steps of chains that follow from `seed` alone.
inline std::vector<db::StepRecord> MakeSteps(const std::string& seed, int64_t n) {
  std::vector<db::StepRecord> steps;
  std::string logits = dv::Sha256Hex("logits " + seed), token = dv::Sha256Hex("token " + seed);
  for (int64_t i = 0; i < n; ++i) {
    logits = dv::Sha256Hex(logits + std::to_string(i));
    token = dv::Sha256Hex(token + std::to_string(i));
    steps.push_back({i, (i * 7919 + 13) % 151936, logits, token});
  }
  return steps;
}

// `base` with its logits chain leaving from step `logits_at` and its token chain (and token ids)
// from `tokens_at`; nullopt keeps that chain. Later chain states follow from the first
// departure, as a real chain's would.
inline std::vector<db::StepRecord> DepartFrom(const std::vector<db::StepRecord>& base,
                                              std::optional<int64_t> logits_at,
                                              std::optional<int64_t> tokens_at,
                                              const std::string& seed = "other") {
  std::vector<db::StepRecord> steps = base;
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto step = static_cast<int64_t>(i);
    if (logits_at && step >= *logits_at) {
      const std::string prev = i == 0 ? seed : steps[i - 1].logits_chain;
      steps[i].logits_chain = dv::Sha256Hex(prev + " logits " + seed + std::to_string(i));
    }
    if (tokens_at && step >= *tokens_at) {
      const std::string prev = i == 0 ? seed : steps[i - 1].token_chain;
      steps[i].token_chain = dv::Sha256Hex(prev + " token " + seed + std::to_string(i));
      steps[i].token_id = (steps[i].token_id + 1) % 151936;
    }
  }
  return steps;
}

// A run of `configuration` with the given steps (status "ok" unless said otherwise; other
// statuses get no steps).
inline db::RunRecord MakeRun(const db::ScenarioRecord& scenario, const db::MachineRecord& machine,
                             const db::ArtifactRecord& artifact, const std::string& configuration,
                             const std::string& engine, const std::string& backend,
                             const std::vector<db::StepRecord>& steps,
                             const std::string& status = "ok",
                             const std::string& status_detail = "", int64_t batch = 1,
                             int64_t split = 0) {
  db::RunRecord run;
  run.scenario = scenario;
  run.machine = machine;
  run.artifact = artifact;
  run.configuration = configuration;
  run.engine = ParseKind<EngineKind>(engine).value();
  run.backend = ParseKind<BackendKind>(backend).value();
  run.status = ParseKind<RunStatus>(status).value();
  run.status_detail = status_detail;
  run.started_at = "2026-01-31T12:00:00Z";
  run.wall_ms = 1000;
  run.tokens_per_s_milli = 100000;
  run.tool_version = "0.1.0";
  run.spec_version = "detllm-v1";
  run.config_json = nlohmann::json{
      {"name", configuration},
      {"engine", engine},
      {"backend", backend},
      {"batch", {{"size", batch}, {"co_prompts", batch > 1}, {"position", 0}}},
      {"split_prefill",
       split}}.dump();
  if (status == "ok") run.steps = steps;
  run.n_steps = static_cast<int64_t>(run.steps.size());
  if (!run.steps.empty()) {
    run.final_logits_chain = run.steps.back().logits_chain;
    run.final_token_chain = run.steps.back().token_chain;
  }
  return run;
}

// A DB in which scenario "demo" ran on one machine: three agreeing int8 rows (b1, b8, split),
// a skipped cuda row, and float rows whose chains leave the int8 b1 row's: fp32-b1 at logits
// step 17 with tokens still agreeing, bf16-b8 at logits step 3 and tokens step 9, fp16-cuda
// skipped. Returns the path.
inline std::string WriteDemoDb(const std::string& path, int64_t steps = 32,
                               const std::string& cpu = "Testbox A") {
  db::RunStore store = db::RunStore::Open(path);
  const db::ScenarioRecord scenario = MakeScenario("demo", steps);
  const db::MachineRecord machine = MakeMachine(cpu);
  const db::ArtifactRecord artifact = MakeArtifact();
  const std::vector<db::StepRecord> base = MakeSteps("int8", steps);
  store.RecordRun(MakeRun(scenario, machine, artifact, "int8-cpu-b1", "int8", "cpu", base));
  store.RecordRun(
      MakeRun(scenario, machine, artifact, "int8-cpu-b8", "int8", "cpu", base, "ok", "", 8));
  store.RecordRun(MakeRun(scenario, machine, artifact, "int8-ref-split", "int8", "reference", base,
                          "ok", "", 1, 5));
  store.RecordRun(MakeRun(scenario, machine, artifact, "int8-cuda-b1", "int8", "cuda", {},
                          "skipped", "no CUDA backend on this machine"));
  store.RecordRun(MakeRun(scenario, machine, artifact, "fp32-cpu-b1", "float", "cpu",
                          DepartFrom(base, 17, std::nullopt)));
  store.RecordRun(MakeRun(scenario, machine, artifact, "bf16-cpu-b8", "float", "cpu",
                          DepartFrom(base, 3, 9), "ok", "", 8));
  store.RecordRun(MakeRun(scenario, machine, artifact, "fp16-cuda-b1", "float", "cuda", {},
                          "skipped", "no CUDA backend on this machine"));
  return path;
}

}  // namespace dv::fleet_testing
