#include "db/sqlite_handle.h"

#include <sqlite3.h>

#include <filesystem>
#include <limits>
#include <thread>
#include <utility>

#include "db/db_error.h"

namespace dv::db {
namespace {

// A short plain-language name for the result codes a user can meet; SQLite's own message
// follows it in parentheses.
std::string Problem(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
      return "not an SQLite database";
    case SQLITE_CORRUPT:
      return "database file is corrupt";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "database is locked";
    case SQLITE_CANTOPEN:
      return "cannot open the file";
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return "file is not writable";
    case SQLITE_FULL:
      return "disk is full";
    case SQLITE_IOERR:
      return "I/O error";
    case SQLITE_CONSTRAINT:
      return "constraint violated";
    default:
      return "SQLite error";
  }
}

// "file:" URI for a read-only open. Every byte outside the unreserved set and '/' is
// percent-encoded, so names with '?', '#' or '%' stay one path.
std::string ReadOnlyUri(const std::string& path, bool immutable) {
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(path, error);
  const std::string text = error ? path : absolute.string();
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file://";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool plain = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
                       (byte >= '0' && byte <= '9') || c == '/' || c == '-' || c == '_' ||
                       c == '.' || c == '~';
    if (plain) {
      uri += c;
    } else {
      uri += '%';
      uri += kHex[byte >> 4];
      uri += kHex[byte & 0x0f];
    }
  }
  return uri + (immutable ? "?mode=ro&immutable=1" : "?mode=ro");
}

int TimeoutMs(std::chrono::milliseconds timeout) {
  const auto count = timeout.count();
  if (count < 0) return 0;
  if (count > std::numeric_limits<int>::max()) return std::numeric_limits<int>::max();
  return static_cast<int>(count);
}

}  // namespace

SqliteHandle::SqliteHandle(sqlite3* db, std::string path, std::chrono::milliseconds lock_timeout)
    : db_(db), path_(std::move(path)), lock_timeout_(lock_timeout) {
  sqlite3_busy_timeout(db_, TimeoutMs(lock_timeout_));
}

SqliteHandle::SqliteHandle(const std::string& path, Mode mode,
                           std::chrono::milliseconds lock_timeout)
    : path_(path), lock_timeout_(lock_timeout) {
  const bool read_only = mode != Mode::kReadWriteCreate;
  const std::string name = read_only ? ReadOnlyUri(path, mode == Mode::kReadOnlyImmutable) : path;
  const int flags = read_only ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
                              : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  const int rc = sqlite3_open_v2(name.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    // sqlite3_open_v2 hands back a handle even on failure; it carries the message.
    const std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw DbError(path_ + ": " + Problem(rc) + " (opening: " + message + ")");
  }
  sqlite3_busy_timeout(db_, TimeoutMs(lock_timeout_));
}

SqliteHandle SqliteHandle::InMemory(const std::string& label,
                                    std::chrono::milliseconds lock_timeout) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_close(db);
    throw DbError(label + ": cannot open an in-memory copy (" + sqlite3_errstr(rc) + ")");
  }
  return SqliteHandle(db, label, lock_timeout);
}

SqliteHandle::~SqliteHandle() {
  // sqlite3_close_v2 defers the close until every statement is finalized; ours are RAII and die
  // first, so this closes at once (and, for the last WAL connection, checkpoints and removes the
  // -wal file).
  if (db_ == nullptr) return;
  if (restore_rollback_on_close_) {
    // Leaving WAL needs the only connection; with others open it fails at once (no waiting) and
    // the last writer to close does it instead.
    sqlite3_busy_timeout(db_, 0);
    sqlite3_exec(db_, "PRAGMA journal_mode = DELETE", nullptr, nullptr, nullptr);
  }
  sqlite3_close_v2(db_);
}

SqliteHandle::SqliteHandle(SqliteHandle&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      path_(std::move(other.path_)),
      lock_timeout_(other.lock_timeout_),
      restore_rollback_on_close_(other.restore_rollback_on_close_) {}

void SqliteHandle::Exec(const std::string& sql, std::string_view what) const {
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) Fail(rc, what);
}

void SqliteHandle::ExecRetryingBusy(const std::string& sql, std::string_view what) const {
  // The busy handler already waits up to the lock timeout inside one attempt; the loop covers
  // the SQLITE_BUSY cases SQLite returns without calling it (a journal-mode switch racing
  // another connection, a WAL index being recovered).
  const auto deadline = std::chrono::steady_clock::now() + lock_timeout_;
  while (true) {
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return;
    const int base = rc & 0xff;
    if (base != SQLITE_BUSY && base != SQLITE_LOCKED) Fail(rc, what);
    if (std::chrono::steady_clock::now() >= deadline) {
      throw DbError(path_ + ": database is locked (" + std::string(what) + ": no lock within " +
                    std::to_string(lock_timeout_.count()) + " ms)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Statement SqliteHandle::Prepare(const std::string& sql, std::string_view what) const {
  sqlite3_stmt* statement = nullptr;
  const int rc =
      sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &statement, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(statement);
    Fail(rc, what.empty() ? "preparing " + sql.substr(0, sql.find(' ', 12)) : std::string(what));
  }
  return Statement(*this, statement, sql);
}

int64_t SqliteHandle::QueryInt(const std::string& sql, std::string_view what) const {
  sqlite3_stmt* statement = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(statement);
    Fail(rc, what);
  }
  rc = sqlite3_step(statement);
  const int64_t value = rc == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : 0;
  sqlite3_finalize(statement);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) Fail(rc, what);
  return value;
}

std::string SqliteHandle::QueryText(const std::string& sql, std::string_view what) const {
  sqlite3_stmt* statement = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(statement);
    Fail(rc, what);
  }
  rc = sqlite3_step(statement);
  std::string value;
  if (rc == SQLITE_ROW) {
    const auto* text = sqlite3_column_text(statement, 0);
    if (text != nullptr) {
      value.assign(reinterpret_cast<const char*>(text),
                   static_cast<size_t>(sqlite3_column_bytes(statement, 0)));
    }
  }
  sqlite3_finalize(statement);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) Fail(rc, what);
  return value;
}

int64_t SqliteHandle::Changes() const { return sqlite3_changes64(db_); }

void SqliteHandle::Fail(int rc, std::string_view what) const {
  const std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  throw DbError(path_ + ": " + Problem(rc) + " (" + std::string(what) + ": " + message + ")");
}

Statement::Statement(const SqliteHandle& handle, sqlite3_stmt* statement, std::string sql)
    : handle_(&handle), statement_(statement), sql_(std::move(sql)) {}

Statement::~Statement() {
  if (statement_ != nullptr) sqlite3_finalize(statement_);
}

Statement::Statement(Statement&& other) noexcept
    : handle_(other.handle_),
      statement_(std::exchange(other.statement_, nullptr)),
      sql_(std::move(other.sql_)) {}

Statement& Statement::Bind(int index, int64_t value) {
  const int rc = sqlite3_bind_int64(statement_, index, value);
  if (rc != SQLITE_OK) handle_->Fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::Bind(int index, const std::string& value) {
  const int rc = sqlite3_bind_text64(statement_, index, value.data(), value.size(),
                                     SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) handle_->Fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::Bind(int index, const std::optional<std::string>& value) {
  if (value) return Bind(index, *value);
  const int rc = sqlite3_bind_null(statement_, index);
  if (rc != SQLITE_OK) handle_->Fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::BindBlob(int index, std::span<const uint8_t> bytes) {
  const int rc = sqlite3_bind_blob64(statement_, index,
                                     bytes.empty() ? static_cast<const void*>("") : bytes.data(),
                                     bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) handle_->Fail(rc, "binding a parameter");
  return *this;
}

bool Statement::Step() {
  const int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  handle_->Fail(rc, "running " + sql_.substr(0, sql_.find(' ', 12)));
}

void Statement::Run() {
  while (Step()) {
  }
}

void Statement::Reset() {
  sqlite3_reset(statement_);
  sqlite3_clear_bindings(statement_);
}

int Statement::ColumnCount() const { return sqlite3_column_count(statement_); }

std::string Statement::ColumnName(int column) const {
  const char* name = sqlite3_column_name(statement_, column);
  return name != nullptr ? name : "";
}

int Statement::ColumnType(int column) const { return sqlite3_column_type(statement_, column); }

int64_t Statement::ColumnInt(int column) const { return sqlite3_column_int64(statement_, column); }

std::string Statement::ColumnText(int column) const {
  const auto* text = sqlite3_column_text(statement_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(statement_, column)));
}

std::vector<uint8_t> Statement::ColumnBlob(int column) const {
  const auto* data = static_cast<const uint8_t*>(sqlite3_column_blob(statement_, column));
  if (data == nullptr) return {};
  return {data, data + sqlite3_column_bytes(statement_, column)};
}

std::optional<std::string> Statement::ColumnOptionalText(int column) const {
  if (sqlite3_column_type(statement_, column) == SQLITE_NULL) return std::nullopt;
  return ColumnText(column);
}

Transaction::Transaction(const SqliteHandle& handle, Kind kind) : handle_(handle) {
  if (kind == Kind::kRead) {
    handle_.Exec("BEGIN DEFERRED", "starting a read transaction");
  } else {
    handle_.ExecRetryingBusy("BEGIN IMMEDIATE", "starting a write");
  }
}

Transaction::~Transaction() {
  // After some errors (disk full, I/O) SQLite has already rolled back; only roll back what is
  // still open.
  if (open_ && sqlite3_get_autocommit(handle_.Raw()) == 0) {
    sqlite3_exec(handle_.Raw(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void Transaction::Commit() {
  handle_.Exec("COMMIT", "committing");
  open_ = false;
}

}  // namespace dv::db
