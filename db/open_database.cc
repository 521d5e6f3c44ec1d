#include "db/open_database.h"

#include <sqlite3.h>

#include "db/db_error.h"
#include "db/migrations.h"

namespace dv::db {

SqliteHandle OpenForWriting(const std::string& path, std::chrono::milliseconds lock_timeout,
                            JournalMode journal_mode) {
  SqliteHandle handle(path, SqliteHandle::Mode::kReadWriteCreate, lock_timeout);
  // Refuse a foreign, corrupt or newer file before the journal-mode switch writes its header.
  CheckSchema(handle);
  if (journal_mode == JournalMode::kWal) {
    // An in-memory DB answers "memory"; a file system without shared memory keeps "delete",
    // which still serializes writers correctly, only with less read concurrency.
    handle.ExecRetryingBusy("PRAGMA journal_mode = WAL", "switching to WAL");
  } else {
    handle.ExecRetryingBusy("PRAGMA journal_mode = DELETE", "choosing the rollback journal");
  }
  handle.Exec("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON", "configuring the connection");
  Migrate(handle);
  return handle;
}

SqliteHandle OpenForReading(const std::string& path, std::chrono::milliseconds lock_timeout) {
  SqliteHandle file(path, SqliteHandle::Mode::kReadOnly, lock_timeout);
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
