// MergeDatabases, in two phases. Staging: every input is read through a read-only connection,
// verified, and its rows are written into a private temporary file beside the output, in one
// transaction; a conflicting duplicate between inputs stops here and the output is never touched.
// Landing: a new output is the staged file itself, put in place with link(2), which refuses to
// replace a file another process created meanwhile; an existing output takes the staged rows in
// one write transaction on the file itself, under the same lock as `run` and `attest sign`, so
// that concurrent writers and merges all land and nobody keeps writing to a replaced file.
#include "db/merge.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "db/db_error.h"
#include "db/open_database.h"
#include "db/records.h"
#include "db/run_store.h"
#include "db/sqlite_handle.h"
#include "db/table_rows.h"
#include "db/verify.h"

namespace dv::db {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTemporaryInfix = ".merge-";
constexpr const char* kTemporarySuffix = ".tmp";

// A temporary DB file (and its rollback journal) that is removed unless released.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string path) : path_(std::move(path)) { Remove(); }
  ~TemporaryFile() { Remove(); }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  const std::string& Path() const { return path_; }

 private:
  void Remove() const {
    std::error_code ignored;
    for (const char* suffix : {"", "-journal", "-wal", "-shm"}) fs::remove(path_ + suffix, ignored);
  }

  std::string path_;
};

// Unique per process and call, in the output's directory so that link(2) can put it in place.
std::string TemporaryPathFor(const std::string& out_path) {
  static std::atomic<int> counter{0};
  return out_path + kTemporaryInfix + std::to_string(::getpid()) + "-" + std::to_string(counter++) +
         kTemporarySuffix;
}

// A merge killed by SIGKILL cannot remove its staged file: the next merge into the same output
// removes those whose process is gone ("<out>.merge-<pid>-<n>.tmp[-journal]").
void RemoveStaleTemporaries(const std::string& out_path) {
  std::error_code error;
  const fs::path out = fs::absolute(fs::path(out_path), error);
  if (error) return;
  const std::string prefix = out.filename().string() + kTemporaryInfix;
  for (const fs::directory_entry& entry : fs::directory_iterator(out.parent_path(), error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos ||
        rest.find(kTemporarySuffix) == std::string::npos) {
      continue;
    }
    long pid = 0;
    try {
      pid = std::stol(rest.substr(0, dash));
    } catch (const std::exception&) {
      continue;
    }
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) {
      std::error_code ignored;
      fs::remove(entry.path(), ignored);
    }
  }
}

// fsync(2) the staged file before it becomes (part of) the output.
void SyncFile(const std::string& path, const std::string& label) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw DbError(label + ": cannot open " + path + " to flush it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw DbError(label + ": cannot flush " + path + " to disk");
}

// fsync(2) the directory so that the new name is durable. Best effort: the link has happened,
// and some file systems refuse fsync on a directory.
void SyncDirectory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

int64_t FileSize(const std::string& path) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  return error ? 0 : static_cast<int64_t>(size);
}

// A log or journal without its database would be replayed onto the new file.
void RequireNoOrphanedLog(const std::string& out_path) {
  for (const char* suffix : {"-wal", "-journal"}) {
    if (FileSize(out_path + suffix) != 0) {
      throw DbError(out_path + ": " + out_path + suffix +
                    " exists without its database; remove it first");
    }
  }
}

void PutOrThrow(PutResult result, const std::string& input, const std::string& what,
                const std::string& id) {
  if (result == PutResult::kConflict) {
    throw DbError(input + ": conflicting duplicate: " + what + " " + id +
                  " differs from the row with the same id in another input");
  }
}

// Copies the rows of `input`, verified first, into the staging file.
void StageOne(const std::string& input, const SqliteHandle& staging) {
  const SqliteHandle in = OpenForReading(input, kDefaultLockTimeout);
  Transaction snapshot(in, Transaction::Kind::kRead);
  // Ids are checked against content, so a row can only enter the output as the library would
  // have written it; rows referring to each other go in after what they refer to.
  VerifyContentOf(in);
  for (const MachineRecord& machine : ListMachines(in)) {
    PutOrThrow(PutMachine(staging, machine), input, "machine", machine.id);
  }
  for (const ArtifactRecord& artifact : ListArtifacts(in)) {
    PutOrThrow(PutArtifact(staging, artifact), input, "artifact", artifact.id);
  }
  for (const ScenarioRecord& scenario : ListScenarios(in)) {
    PutOrThrow(PutScenario(staging, scenario), input, "scenario", scenario.id);
  }
  for (const std::string& id : ListRunIds(in)) {
    const RunRecord run = FindRun(in, id, StepLoading::kWithSteps).value();
    const PutResult result = PutRunRow(staging, run);
    PutOrThrow(result, input, "run", run.id);
    if (result == PutResult::kInserted) {
      PutSteps(staging, run.id, run.steps);
      PutFloatLogits(staging, run.id, run.step0_logits);
    }
  }
  for (const AttestationRecord& attestation : ListAttestations(in)) {
    PutOrThrow(PutAttestation(staging, attestation), input, "attestation", attestation.id);
  }
  snapshot.Commit();
}

MergeSummary Count(const SqliteHandle& handle) {
  MergeSummary summary;
  summary.machines = handle.QueryInt("SELECT count(*) FROM machines", "counting");
  summary.artifacts = handle.QueryInt("SELECT count(*) FROM artifacts", "counting");
  summary.scenarios = handle.QueryInt("SELECT count(*) FROM scenarios", "counting");
  summary.runs = handle.QueryInt("SELECT count(*) FROM runs", "counting");
  summary.steps = handle.QueryInt("SELECT count(*) FROM steps", "counting");
  summary.attestations = handle.QueryInt("SELECT count(*) FROM attestations", "counting");
  return summary;
}

// Detaches the staged file when the landing ends, however it ends.
class Attached {
 public:
  Attached(const SqliteHandle& handle, const std::string& path) : handle_(handle) {
    handle_.Prepare("ATTACH DATABASE ?1 AS incoming", "attaching the staged rows")
        .Bind(1, path)
        .Run();
  }
  ~Attached() { Detach(); }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  void Detach() const noexcept {
    try {
      handle_.Exec("DETACH DATABASE incoming", "detaching the staged rows");
    } catch (const DbError&) {  // the connection closes next; nothing is left attached
    }
  }
  const SqliteHandle& handle_;
};

// The staged rows into an existing output, in one write transaction. Tables with an id column
// are compared row for row where ids meet (both files come from the same migrations, so their
// columns agree); steps follow their new runs.
MergeSummary LandInto(const std::string& out_path, const std::string& staged_path) {
  const SqliteHandle out = OpenForWriting(out_path, kDefaultLockTimeout, JournalMode::kWal);
  // The output is one more input: verify it before adding to it (outside the lock; what other
  // processes add meanwhile goes through the library's own checks).
  VerifyContentOf(out);
  const Attached incoming(out, staged_path);
  Transaction transaction(out, Transaction::Kind::kWrite);
  for (const char* table : {"machines", "artifacts", "scenarios", "runs", "attestations"}) {
    const std::string name = table;
    const std::string conflict = out.QueryText(
        "SELECT i.id FROM incoming." + name + " i WHERE i.id IN (SELECT id FROM main." + name +
            ") AND NOT EXISTS (SELECT * FROM main." + name + " WHERE id = i.id INTERSECT " +
            "SELECT * FROM incoming." + name + " WHERE id = i.id) ORDER BY i.id LIMIT 1",
        "comparing " + name);
    if (!conflict.empty()) {
      throw DbError(out_path + ": conflicting duplicate: " + name.substr(0, name.size() - 1) + " " +
                    conflict + " of the inputs differs from the row with the same id in " +
                    out_path + "; left unchanged");
    }
    out.Exec("INSERT INTO main." + name + " SELECT * FROM incoming." + name +
                 " WHERE id NOT IN (SELECT id FROM main." + name + ")",
             "adding " + name);
  }
  out.Exec(
      "INSERT INTO main.steps SELECT * FROM incoming.steps i WHERE NOT EXISTS "
      "(SELECT 1 FROM main.steps s WHERE s.run_id = i.run_id AND s.step = i.step)",
      "adding steps");
  // A run's step-0 float logits come with the run (its id covers their SHA-256).
  out.Exec(
      "INSERT INTO main.float_logits SELECT * FROM incoming.float_logits i WHERE NOT EXISTS "
      "(SELECT 1 FROM main.float_logits f WHERE f.run_id = i.run_id)",
      "adding float logits");
  const MergeSummary summary = Count(out);
  transaction.Commit();
  return summary;
}

}  // namespace

MergeSummary MergeDatabases(const std::vector<std::string>& inputs, const std::string& out_path) {
  if (out_path.empty() || out_path == ":memory:" || out_path.starts_with("file:")) {
    throw DbError("merge: '" + out_path + "' is not a file path for the output");
  }
  RemoveStaleTemporaries(out_path);
  const TemporaryFile staged(TemporaryPathFor(out_path));
  MergeSummary summary;
  {
    const SqliteHandle staging =
        OpenForWriting(staged.Path(), kDefaultLockTimeout, JournalMode::kRollback);
    // The file is private until it lands and is synced once below; per-commit syncs buy
    // nothing here.
    staging.Exec("PRAGMA synchronous = OFF", "configuring the merge output");
    Transaction transaction(staging, Transaction::Kind::kWrite);
    for (const std::string& input : inputs) StageOne(input, staging);
    summary = Count(staging);
    transaction.Commit();
  }
  std::error_code error;
  if (!fs::exists(out_path, error)) {
    RequireNoOrphanedLog(out_path);
    SyncFile(staged.Path(), out_path);
    if (::link(staged.Path().c_str(), out_path.c_str()) == 0) {
      SyncDirectory(fs::absolute(fs::path(out_path), error).parent_path().string());
      return summary;
    }
    if (errno != EEXIST) {
      throw DbError(out_path + ": cannot create it (" + std::strerror(errno) + ")");
    }
    // Another merge or run created the output meanwhile: add to it like to any existing one.
  }
  return LandInto(out_path, staged.Path());
}

}  // namespace dv::db
