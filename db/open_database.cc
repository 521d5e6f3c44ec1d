#include "db/open_database.h"

#include <sqlite3.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "db/db_error.h"
#include "db/migrations.h"
#include "db/staged_file.h"

namespace dv::db {
namespace {

constexpr std::chrono::milliseconds kRecoveryTimeout{2000};

// True when the file's header says WAL (bytes 18 and 19 of the SQLite header are 2) and its
// log does not exist: nobody has it open for writing (a writer keeps the log while connected),
// so an immutable open reads it without creating -wal/-shm, in a folder the reader may not be
// able to write.
bool WalModeAtRest(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::array<char, 20> header{};
  if (!file.read(header.data(), header.size())) return false;
  std::error_code error;
  return header[18] == 2 && header[19] == 2 && !std::filesystem::exists(path + "-wal", error) &&
         !error;
}

// SQLite would block opening a FIFO read-only and read a device without end: only a regular
// file (or nothing, where the caller may create one) is opened.
void RequireRegularFile(const std::string& path, bool may_be_missing) {
  if (path == ":memory:") return;
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found && may_be_missing) return;
  if (status.type() == std::filesystem::file_type::not_found) {
    throw DbError(path + ": cannot open the file (no such file)");
  }
  if (error || status.type() != std::filesystem::file_type::regular) {
    throw DbError(path + ": not a regular file");
  }
}

// A writer killed inside a rollback-journal transaction (a journal-mode switch) leaves a hot
// journal that only a read-write connection may roll back; read-only opens would fail until
// then. Rolling it back restores the last committed state, so a reader that may write the
// folder does it first (SQLite rolls back on the first read, and only a journal no live
// process holds a lock for). Best effort: otherwise the read-only open reports the problem.
void RecoverInterruptedTransaction(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path + "-journal", error);
  if (error || size == 0) return;
  try {
    const SqliteHandle recover(path, SqliteHandle::Mode::kReadWriteCreate, kRecoveryTimeout);
    recover.QueryInt("SELECT count(*) FROM sqlite_schema", "recovering an interrupted transaction");
  } catch (const DbError&) {
  }
}

constexpr const char* kCreationInfix = ".create-";

// A missing `path` becomes a DB of the newest schema in one step: the schema is written to a
// staged file that then takes the name with link(2). Two processes creating the same DB both
// succeed (the second finds the first's file and opens it). A file system without hard links
// creates the file in place, as SQLite would.
void CreateWhole(const std::string& path, std::chrono::milliseconds lock_timeout) {
  if (path == ":memory:" || path.starts_with("file:")) return;
  // Also after a creator was killed between the link and the removal of its staged name.
  RemoveStaleStagedFiles(path, kCreationInfix);
  std::error_code error;
  if (std::filesystem::exists(path, error) || error) return;
  RequireNoOrphanedLog(path);
  const StagedFile staged(path, kCreationInfix);
  try {
    const SqliteHandle handle(staged.Path(), SqliteHandle::Mode::kReadWriteCreate, lock_timeout);
    handle.Exec("PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL", "creating the file");
    Migrate(handle);
  } catch (const DbError& failure) {
    // The user named `path`, not the staged file.
    const std::string message = failure.what();
    if (!message.starts_with(staged.Path())) throw;
    throw DbError(path + message.substr(staged.Path().size()));
  }
  try {
    staged.PlaceIfAbsent(path);
  } catch (const DbError&) {
    // No link(2) here (some FUSE and FAT file systems): SQLite creates the file below.
  }
}

}  // namespace

SqliteHandle OpenForWriting(const std::string& path, std::chrono::milliseconds lock_timeout,
                            JournalMode journal_mode, Creation creation) {
  RequireRegularFile(path, /*may_be_missing=*/true);
  if (creation == Creation::kAtomic) CreateWhole(path, lock_timeout);
  SqliteHandle handle(path, SqliteHandle::Mode::kReadWriteCreate, lock_timeout);
  // Refuse a foreign, corrupt or newer file before the journal-mode switch writes its header.
  CheckSchema(handle);
  if (journal_mode == JournalMode::kWal) {
    // An in-memory DB answers "memory"; a file system without shared memory keeps "delete",
    // which still serializes writers correctly, only with less read concurrency.
    handle.ExecRetryingBusy("PRAGMA journal_mode = WAL", "switching to WAL");
    if (path != ":memory:") handle.RestoreRollbackJournalOnClose();
  } else {
    handle.ExecRetryingBusy("PRAGMA journal_mode = DELETE", "choosing the rollback journal");
  }
  handle.Exec("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON", "configuring the connection");
  Migrate(handle);
  return handle;
}

SqliteHandle OpenForReading(const std::string& path, std::chrono::milliseconds lock_timeout) {
  RequireRegularFile(path, /*may_be_missing=*/false);
  RecoverInterruptedTransaction(path);
  SqliteHandle file(
      path,
      WalModeAtRest(path) ? SqliteHandle::Mode::kReadOnlyImmutable : SqliteHandle::Mode::kReadOnly,
      lock_timeout);
  const int version = CheckSchema(file);
  if (version == 0) throw DbError(path + ": not a detverify database (no detverify schema)");
  if (version == NewestSchemaVersion()) return file;
  // An older schema cannot be migrated in place without writing the file: migrate a copy.
  SqliteHandle copy = SqliteHandle::InMemory(path, lock_timeout);
  sqlite3_backup* backup = sqlite3_backup_init(copy.Raw(), "main", file.Raw(), "main");
  if (backup == nullptr) copy.Fail(sqlite3_errcode(copy.Raw()), "copying into memory");
  const int step = sqlite3_backup_step(backup, -1);
  const int finish = sqlite3_backup_finish(backup);
  if (step != SQLITE_DONE) file.Fail(step, "copying into memory");
  if (finish != SQLITE_OK) file.Fail(finish, "copying into memory");
  copy.Exec("PRAGMA foreign_keys = ON", "configuring the connection");
  Migrate(copy);
  return copy;
}

}  // namespace dv::db
