// Shared fixtures of the db/ tests: deterministic sample runs, scratch directories, raw SQLite
// access for setting up files the library must refuse.
#pragma once

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "db/run_store.h"
#include "tests/support/scratch_files.h"

namespace dv::db::testing {

// A run of `n_steps` steps whose every field follows from `label`, `machine` and `n_steps`:
// the same arguments give the same run (and id) on every platform.
inline RunRecord MakeRun(const std::string& label, int64_t n_steps,
                         const std::string& machine = "box-a",
                         const std::string& artifact_source = "synthetic:qwen3-0.6b seed=0") {
  RunRecord run;
  run.scenario = ScenarioRecord{"", "sonnet18", "name: sonnet18\ngenerate: {max_new: 512}\n"};
  run.machine = MachineRecord{"", nlohmann::json{{"cpu", machine}, {"cores", 16}}.dump()};
  run.artifact = ArtifactRecord{Sha256Hex("model.safetensors"), artifact_source, true,
                                Sha256Hex("config.json")};
  run.configuration = label;
  run.engine = EngineKind::kInt8;
  run.backend = BackendKind::kCpu;
  run.status = RunStatus::kOk;
  run.status_detail = "";
  run.started_at = "2025-01-31T12:00:00Z";
  run.wall_ms = 1234;
  run.tokens_per_s_milli = 56789;
  run.n_steps = n_steps;
  run.wrap_events = 0;
  run.tool_version = "0.1.0";
  run.spec_version = "detllm-v1";
  run.config_json = nlohmann::json{{"batch", 1}, {"name", label}}.dump();
  std::string logits = Sha256Hex("logits:" + label);
  std::string token = Sha256Hex("token:" + label);
  for (int64_t step = 0; step < n_steps; ++step) {
    logits = Sha256Hex(logits + std::to_string(step));
    token = Sha256Hex(token + std::to_string(step));
    run.steps.push_back(StepRecord{step, (step * 7919 + 13) % 151936, logits, token});
  }
  if (n_steps > 0) {
    run.final_logits_chain = run.steps.back().logits_chain;
    run.final_token_chain = run.steps.back().token_chain;
  }
  return run;
}

// The run as the store returns it: every id filled in.
inline RunRecord Stored(RunRecord run) {
  run.id = ComputeRunId(run);
  run.scenario.id = ComputeScenarioId(run.scenario);
  run.machine.id = ComputeMachineId(run.machine);
  return run;
}

inline AttestationRecord MakeAttestation(const std::string& signer) {
  return AttestationRecord{"",
                           nlohmann::json{{"payloadType", "application/vnd.in-toto+json"},
                                          {"payload", "e30="},
                                          {"signatures", {{{"keyid", signer}, {"sig", "AAAA"}}}}}
                               .dump(),
                           signer, "2025-01-31T13:00:00Z"};
}

using test_files::ScratchDir;
inline std::string ReadBytes(const std::string& path) { return test_files::ReadFile(path); }
inline void WriteBytes(const std::string& path, const std::string& bytes) {
  test_files::WriteFile(path, bytes);
}

// Runs `sql` on `path` through a plain SQLite connection and returns the first column of the
// last row it produced ("" when none): for setting up and inspecting files behind the library.
inline std::string RawSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    throw std::runtime_error("cannot open " + path);
  }
  sqlite3_busy_timeout(db, 10000);
  std::string last;
  char* error = nullptr;
  const int rc = sqlite3_exec(
      db, sql.c_str(),
      [](void* out, int columns, char** values, char**) {
        if (columns > 0) *static_cast<std::string*>(out) = values[0] != nullptr ? values[0] : "";
        return 0;
      },
      &last, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error("sql on " + path + ": " + message);
  return last;
}

// Runs whose stored n_steps differs from the number of their step rows.
inline std::string IncompleteRuns(const std::string& path) {
  return RawSql(path,
                "SELECT count(*) FROM runs r WHERE r.n_steps != "
                "(SELECT count(*) FROM steps s WHERE s.run_id = r.id)");
}

}  // namespace dv::db::testing
