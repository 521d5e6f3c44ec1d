// VerifyContentOf reads every row once, inside one read transaction, and applies the same
// validation as the write side (record_validation.cc) plus the checks that span rows.
#include "db/verify.h"

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "db/db_error.h"
#include "db/open_database.h"
#include "db/records.h"
#include "db/run_store.h"
#include "db/sqlite_handle.h"
#include "db/table_rows.h"

namespace dv::db {
namespace {

template <typename Record>
void Check(const std::string& where, void (*validate)(const Record&), const Record& record) {
  try {
    validate(record);
  } catch (const DbError& error) {
    throw DbError(where + ": " + error.what());
  }
}

// The first 16 hex digits of a chain as a number: enough to tell chains apart in a DB (a
// false alarm needs a 64-bit prefix collision), at a fraction of the memory of full strings.
uint64_t Prefix(const std::string& hex) {
  uint64_t value = 0;
  for (size_t i = 0; i < 16 && i < hex.size(); ++i) {
    const char c = hex[i];
    value = (value << 4) | static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return value;
}

struct StepKey {
  int64_t step;
  uint64_t chain;
  bool operator==(const StepKey&) const = default;
};

struct StepKeyHash {
  size_t operator()(const StepKey& key) const {
    return static_cast<size_t>(key.chain ^ (static_cast<uint64_t>(key.step) * 0x9e3779b97f4a7c15u));
  }
};

// For every (step, chain state) seen: the state before it and the run it came from. A hash
// chain's state determines its predecessor, so two runs with the same state at a step and
// different states the step before have been edited.
class ChainPredecessors {
 public:
  explicit ChainPredecessors(const char* which) : which_(which) {}

  // Throws DbError naming both runs when `run` re-converges with an earlier run.
  void Add(const std::string& path, const RunRecord& run, size_t step, const std::string& chain,
           const std::string& previous) {
    const StepKey key{static_cast<int64_t>(step), Prefix(chain)};
    const uint64_t before = step == 0 ? 0 : Prefix(previous);
    const auto [entry, inserted] = seen_.try_emplace(key, Entry{before, run.id});
    if (!inserted && entry->second.previous != before) {
      throw DbError(path + ": run " + run.id + " (configuration '" + run.configuration +
                    "'): " + which_ + " chain at step " + std::to_string(step) +
                    " equals that of run " + entry->second.run_id +
                    " although the two differ at step " + std::to_string(step - 1) +
                    " (a hash chain cannot re-converge: the rows were altered)");
    }
  }

 private:
  struct Entry {
    uint64_t previous;
    std::string run_id;
  };
  const char* which_;
  std::unordered_map<StepKey, Entry, StepKeyHash> seen_;
};

}  // namespace

VerifySummary VerifyContentOf(const SqliteHandle& handle) {
  const std::string& path = handle.Path();
  // One snapshot: the caller's transaction when it holds one (a merge copying what it verified).
  std::optional<Transaction> snapshot;
  if (sqlite3_get_autocommit(handle.Raw()) != 0) snapshot.emplace(handle, Transaction::Kind::kRead);
  VerifySummary summary;
  for (const MachineRecord& machine : ListMachines(handle)) {
    Check(path + ": machine " + machine.id, ValidateMachine, machine);
    ++summary.machines;
  }
  for (const ArtifactRecord& artifact : ListArtifacts(handle)) {
    Check(path + ": artifact " + artifact.id, ValidateArtifact, artifact);
    ++summary.artifacts;
  }
  for (const ScenarioRecord& scenario : ListScenarios(handle)) {
    Check(path + ": scenario " + scenario.id, ValidateScenario, scenario);
    ++summary.scenarios;
  }
  {
    Statement orphans = handle.Prepare(
        "SELECT run_id, count(*) FROM steps WHERE run_id NOT IN (SELECT id FROM runs) "
        "GROUP BY run_id ORDER BY run_id LIMIT 1");
    if (orphans.Step()) {
      throw DbError(path + ": " + std::to_string(orphans.ColumnInt(1)) + " steps of run " +
                    orphans.ColumnText(0) + ", which is not in the database");
    }
  }
  ChainPredecessors logits("logits");
  ChainPredecessors tokens("token");
  for (const std::string& id : ListRunIds(handle)) {
    const RunRecord run = FindRun(handle, id, StepLoading::kWithSteps).value();
    Check(path + ": run " + id + " (configuration '" + run.configuration + "')", ValidateRun, run);
    for (size_t i = 0; i < run.steps.size(); ++i) {
      const bool first = i == 0;
      logits.Add(path, run, i, run.steps[i].logits_chain,
                 first ? std::string() : run.steps[i - 1].logits_chain);
      tokens.Add(path, run, i, run.steps[i].token_chain,
                 first ? std::string() : run.steps[i - 1].token_chain);
    }
    ++summary.runs;
    summary.steps += static_cast<int64_t>(run.steps.size());
  }
  for (const AttestationRecord& attestation : ListAttestations(handle)) {
    Check(path + ": attestation " + attestation.id, ValidateAttestation, attestation);
    ++summary.attestations;
  }
  if (snapshot) snapshot->Commit();
  return summary;
}

VerifySummary VerifyDatabase(const std::string& path) {
  const SqliteHandle handle = OpenForReading(path, kDefaultLockTimeout);
  {
    Statement check = handle.Prepare("PRAGMA integrity_check", "checking integrity");
    std::string problems;
    int shown = 0;
    while (check.Step()) {
      const std::string line = check.ColumnText(0);
      if (line == "ok") break;
      if (shown++ < 3) problems += (problems.empty() ? "" : "; ") + line;
    }
    if (!problems.empty()) throw DbError(path + ": integrity_check failed: " + problems);
  }
  // The content checks name the run; foreign_key_check then covers any reference they do not read.
  const VerifySummary summary = VerifyContentOf(handle);
  {
    Statement check = handle.Prepare("PRAGMA foreign_key_check", "checking references");
    if (check.Step()) {
      throw DbError(path + ": a row of table " + check.ColumnText(0) + " refers to a row of " +
                    check.ColumnText(2) + " that is not in the database");
    }
  }
  return summary;
}

}  // namespace dv::db
