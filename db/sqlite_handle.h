// Thin RAII layer over the SQLite C API for db/ (internal: other modules include run_store.h).
// Every failing SQLite call becomes a DbError "<path>: <what>: <SQLite's message>".
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace dv::db {

class Statement;

// One connection. Not thread-safe; one per thread or process (never used across fork()).
class SqliteHandle {
 public:
  enum class Mode {
    kReadWriteCreate,  // creates the file when missing; ":memory:" gives a private in-memory DB
    kReadOnly,         // opens "file:<path>?mode=ro": never creates or writes the file
    // "file:<path>?mode=ro&immutable=1": no locks and no -wal/-shm companions; only for a file
    // nobody writes (a WAL-mode DB at rest, whose log does not exist)
    kReadOnlyImmutable,
  };
  // Opens `path`; `lock_timeout` bounds every wait for another connection's lock.
  SqliteHandle(const std::string& path, Mode mode, std::chrono::milliseconds lock_timeout);
  // A private in-memory DB whose errors are reported under `label` (a file name).
  static SqliteHandle InMemory(const std::string& label, std::chrono::milliseconds lock_timeout);
  ~SqliteHandle();
  SqliteHandle(SqliteHandle&& other) noexcept;
  SqliteHandle& operator=(SqliteHandle&&) = delete;
  SqliteHandle(const SqliteHandle&) = delete;
  SqliteHandle& operator=(const SqliteHandle&) = delete;

  sqlite3* Raw() const { return db_; }
  const std::string& Path() const { return path_; }
  std::chrono::milliseconds LockTimeout() const { return lock_timeout_; }

  // Runs one or more statements that return no rows of interest.
  void Exec(const std::string& sql, std::string_view what) const;
  // Exec for a statement that needs a lock SQLite may refuse without calling the busy handler
  // (BEGIN IMMEDIATE, a journal-mode switch): retries SQLITE_BUSY until the lock timeout has
  // passed, then throws DbError "<path>: database is locked (...)".
  void ExecRetryingBusy(const std::string& sql, std::string_view what) const;
  // Prepares one statement; `what` names it in error messages (default: its first words).
  Statement Prepare(const std::string& sql, std::string_view what = {}) const;
  // The first column of the first row of `sql` as an integer (0 when there is no row).
  int64_t QueryInt(const std::string& sql, std::string_view what) const;
  // The first column of the first row of `sql` as text (empty when there is no row or NULL).
  std::string QueryText(const std::string& sql, std::string_view what) const;
  // Rows changed by the last INSERT/UPDATE/DELETE.
  int64_t Changes() const;

  // On close, when this is the last connection to the file, switch it back to the rollback
  // journal: the file at rest then needs no -wal/-shm companions, so read-only users in a folder
  // they cannot write open it without creating any. Skipped silently while others have it open.
  void RestoreRollbackJournalOnClose() { restore_rollback_on_close_ = true; }

  // Throws DbError "<path>: <what>: <problem>" for SQLite result code `rc`.
  [[noreturn]] void Fail(int rc, std::string_view what) const;

 private:
  SqliteHandle(sqlite3* db, std::string path, std::chrono::milliseconds lock_timeout);

  sqlite3* db_ = nullptr;
  std::string path_;
  std::chrono::milliseconds lock_timeout_;
  bool restore_rollback_on_close_ = false;
};

// One prepared statement; parameters are 1-based, columns 0-based as in SQLite.
class Statement {
 public:
  Statement(const SqliteHandle& handle, sqlite3_stmt* statement, std::string sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, const std::string& value);
  Statement& Bind(int index, const std::optional<std::string>& value);  // nullopt binds NULL
  Statement& BindBlob(int index, std::span<const uint8_t> bytes);
  // Advances; true while a row is available, false when done.
  bool Step();
  // Steps a statement that returns no rows (INSERT, UPDATE, ...).
  void Run();
  // Makes the statement runnable again with fresh bindings.
  void Reset();

  int ColumnCount() const;
  std::string ColumnName(int column) const;
  int ColumnType(int column) const;  // SQLITE_INTEGER, SQLITE_TEXT, SQLITE_NULL, ...
  int64_t ColumnInt(int column) const;
  std::string ColumnText(int column) const;  // NULL reads as ""
  std::optional<std::string> ColumnOptionalText(int column) const;
  std::vector<uint8_t> ColumnBlob(int column) const;  // NULL reads as empty

 private:
  const SqliteHandle* handle_;
  sqlite3_stmt* statement_;
  std::string sql_;
};

// A transaction that rolls back unless Commit() ran. kWrite takes the write lock up front
// (BEGIN IMMEDIATE) and retries SQLITE_BUSY until the handle's lock timeout has passed, then
// throws DbError "database is locked"; kRead (BEGIN DEFERRED) gives a consistent snapshot.
class Transaction {
 public:
  enum class Kind { kRead, kWrite };
  Transaction(const SqliteHandle& handle, Kind kind);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void Commit();

 private:
  const SqliteHandle& handle_;
  bool open_ = true;
};

}  // namespace dv::db
