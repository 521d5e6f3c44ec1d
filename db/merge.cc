// MergeDatabases: every input is read through a read-only connection and its rows are written,
// re-validated, into a temporary file beside the output, in one transaction. Only a complete
// merge replaces the output, by rename(2); any failure deletes the temporary file.
#include "db/merge.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <system_error>

#include "db/db_error.h"
#include "db/open_database.h"
#include "db/records.h"
#include "db/run_store.h"
#include "db/sqlite_handle.h"
#include "db/table_rows.h"

namespace dv::db {
namespace {

namespace fs = std::filesystem;

// A temporary DB file (and its rollback journal) that is removed unless released.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string path) : path_(std::move(path)) { Remove(); }
  ~TemporaryFile() {
    if (!released_) Remove();
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  const std::string& Path() const { return path_; }
  void Release() { released_ = true; }

 private:
  void Remove() const {
    std::error_code ignored;
    for (const char* suffix : {"", "-journal", "-wal", "-shm"}) fs::remove(path_ + suffix, ignored);
  }

  std::string path_;
  bool released_ = false;
};

// Unique per process and call, in the output's directory so that rename(2) is atomic.
std::string TemporaryPathFor(const std::string& out_path) {
  static std::atomic<int> counter{0};
  return out_path + ".merge-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) +
         ".tmp";
}

// fsync(2) the merged file before it replaces the output.
void SyncFile(const std::string& path, const std::string& label) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw DbError(label + ": cannot open " + path + " to flush it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw DbError(label + ": cannot flush " + path + " to disk");
}

// fsync(2) the directory so that the rename itself is durable. Best effort: the rename has
// happened, and some file systems refuse fsync on a directory.
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

// A stale write-ahead log or rollback journal beside the output would be replayed onto the new
// file: make sure the output has neither (checkpointing its log when nobody else uses the file)
// before the rename.
void EnsureNoPendingLog(const std::string& out_path, std::chrono::milliseconds lock_timeout) {
  if (FileSize(out_path + "-journal") != 0) {
    throw DbError(out_path + ": has an unfinished transaction (" + out_path +
                  "-journal); open it once with detverify to recover it, then merge again");
  }
  const std::string log = out_path + "-wal";
  if (FileSize(log) == 0) return;
  std::error_code error;
  if (!fs::exists(out_path, error)) {
    throw DbError(out_path + ": a write-ahead log " + log +
                  " exists without its database; "
                  "remove it first");
  }
  {
    SqliteHandle out(out_path, SqliteHandle::Mode::kReadWriteCreate, lock_timeout);
    out.QueryText("PRAGMA wal_checkpoint(TRUNCATE)", "checkpointing before the replace");
  }
  if (FileSize(log) != 0) {
    throw DbError(out_path +
                  ": in use by another process (its write-ahead log is not empty); "
                  "left unchanged");
  }
}

template <typename Record>
void Validated(const std::string& input, void (*validate)(const Record&), const Record& record) {
  try {
    validate(record);
  } catch (const DbError& error) {
    throw DbError(input + ": " + error.what());
  }
}

void PutOrThrow(PutResult result, const std::string& input, const std::string& what,
                const std::string& id) {
  if (result == PutResult::kConflict) {
    throw DbError(input + ": conflicting duplicate: " + what + " " + id +
                  " differs from the row with the same id in another input");
  }
}

void MergeOne(const std::string& input, const SqliteHandle& out) {
  const SqliteHandle in = OpenForReading(input, kDefaultLockTimeout);
  Transaction snapshot(in, Transaction::Kind::kRead);
  // Ids are checked against content, so a row can only enter the output as the library would
  // have written it; rows referring to each other go in after what they refer to.
  for (const MachineRecord& machine : ListMachines(in)) {
    Validated(input, ValidateMachine, machine);
    PutOrThrow(PutMachine(out, machine), input, "machine", machine.id);
  }
  for (const ArtifactRecord& artifact : ListArtifacts(in)) {
    Validated(input, ValidateArtifact, artifact);
    PutOrThrow(PutArtifact(out, artifact), input, "artifact", artifact.id);
  }
  for (const ScenarioRecord& scenario : ListScenarios(in)) {
    Validated(input, ValidateScenario, scenario);
    PutOrThrow(PutScenario(out, scenario), input, "scenario", scenario.id);
  }
  for (const std::string& id : ListRunIds(in)) {
    const RunRecord run = FindRun(in, id, StepLoading::kWithSteps).value();
    Validated(input, ValidateRun, run);
    const PutResult result = PutRunRow(out, run);
    PutOrThrow(result, input, "run", run.id);
    if (result == PutResult::kInserted) {
      PutSteps(out, run.id, run.steps);
      PutFloatLogits(out, run.id, run.step0_logits);
    }
  }
  for (const AttestationRecord& attestation : ListAttestations(in)) {
    Validated(input, ValidateAttestation, attestation);
    PutOrThrow(PutAttestation(out, attestation), input, "attestation", attestation.id);
  }
  snapshot.Commit();
}

}  // namespace

MergeSummary MergeDatabases(const std::vector<std::string>& inputs, const std::string& out_path) {
  if (out_path.empty() || out_path == ":memory:" || out_path.starts_with("file:")) {
    throw DbError("merge: '" + out_path + "' is not a file path for the output");
  }
  std::vector<std::string> sources = inputs;
  std::error_code error;
  if (fs::exists(out_path, error)) sources.push_back(out_path);

  TemporaryFile temporary(TemporaryPathFor(out_path));
  MergeSummary summary;
  {
    const SqliteHandle out =
        OpenForWriting(temporary.Path(), kDefaultLockTimeout, JournalMode::kRollback);
    // The file is private until the rename and is synced once below; per-commit syncs buy
    // nothing here.
    out.Exec("PRAGMA synchronous = OFF", "configuring the merge output");
    Transaction transaction(out, Transaction::Kind::kWrite);
    for (const std::string& source : sources) MergeOne(source, out);
    summary.machines = out.QueryInt("SELECT count(*) FROM machines", "counting");
    summary.artifacts = out.QueryInt("SELECT count(*) FROM artifacts", "counting");
    summary.scenarios = out.QueryInt("SELECT count(*) FROM scenarios", "counting");
    summary.runs = out.QueryInt("SELECT count(*) FROM runs", "counting");
    summary.steps = out.QueryInt("SELECT count(*) FROM steps", "counting");
    summary.attestations = out.QueryInt("SELECT count(*) FROM attestations", "counting");
    transaction.Commit();
  }
  SyncFile(temporary.Path(), out_path);
  EnsureNoPendingLog(out_path, kDefaultLockTimeout);
  fs::rename(temporary.Path(), out_path, error);
  if (error) {
    throw DbError(out_path + ": cannot replace it with the merged file (" + error.message() + ")");
  }
  temporary.Release();
  SyncDirectory(fs::absolute(fs::path(out_path), error).parent_path().string());
  return summary;
}

}  // namespace dv::db
