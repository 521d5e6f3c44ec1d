#include "db/migrations.h"

#include <array>
#include <string>
#include <vector>

#include "db/db_error.h"
#include "db/embedded_migrations.h"
#include "db/sqlite_handle.h"

namespace dv::db {
namespace {

// Tables every schema version from 1 on has; a DB claiming a version without them is refused.
constexpr std::array<const char*, 6> kRequiredTables = {"machines", "artifacts", "scenarios",
                                                        "runs",     "steps",     "attestations"};

}  // namespace

std::span<const EmbeddedMigration> Migrations() { return kEmbeddedMigrations; }

int NewestSchemaVersion() { return Migrations().back().version; }

int CheckSchema(const SqliteHandle& handle) {
  // One statement, so one read snapshot: separate reads could straddle another process's
  // migration and see its tables without its version. It is also the first read of the file, so
  // a non-SQLite file fails here with SQLITE_NOTADB.
  Statement query = handle.Prepare(
      "SELECT (SELECT user_version FROM pragma_user_version), "
      "(SELECT application_id FROM pragma_application_id), "
      "(SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'), "
      "(SELECT group_concat(name, ',') FROM sqlite_schema WHERE type = 'table')",
      "reading the schema version");
  query.Step();
  const int64_t version = query.ColumnInt(0);
  const int64_t application = query.ColumnInt(1);
  const int64_t objects = query.ColumnInt(2);
  std::string tables = ",";
  tables += query.ColumnText(3);
  tables += ',';
  const std::string& path = handle.Path();
  if (version == 0) {
    if (objects != 0 || (application != 0 && application != kApplicationId)) {
      throw DbError(path +
                    ": not a detverify database (it holds other tables and no detverify "
                    "schema version)");
    }
    return 0;
  }
  if (application != kApplicationId) {
    throw DbError(path + ": not a detverify database (application_id " +
                  std::to_string(application) + ", user_version " + std::to_string(version) + ")");
  }
  if (version < 0 || version > NewestSchemaVersion()) {
    throw DbError(path + ": schema version " + std::to_string(version) +
                  " is newer than this build knows (newest " +
                  std::to_string(NewestSchemaVersion()) + "); use a newer detverify");
  }
  std::vector<const char*> required(kRequiredTables.begin(), kRequiredTables.end());
  if (version >= 2) required.push_back("float_logits");
  for (const char* table : required) {
    std::string needle = ",";
    needle += table;
    needle += ',';
    if (tables.find(needle) == std::string::npos) {
      throw DbError(path + ": not a detverify database (schema version " + std::to_string(version) +
                    " but no table '" + table + "')");
    }
  }
  return static_cast<int>(version);
}

void Migrate(const SqliteHandle& handle) {
  if (CheckSchema(handle) == NewestSchemaVersion()) return;
  Transaction transaction(handle, Transaction::Kind::kWrite);
  // Check again under the write lock: another process may have migrated the file meanwhile.
  const int version = CheckSchema(handle);
  for (const EmbeddedMigration& migration : Migrations()) {
    if (migration.version <= version) continue;
    handle.Exec(migration.sql, std::string("applying migration ") + migration.name);
    handle.Exec("PRAGMA user_version = " + std::to_string(migration.version),
                "recording the schema version");
  }
  if (version == 0) {
    handle.Exec("PRAGMA application_id = " + std::to_string(kApplicationId),
                "recording application_id");
  }
  transaction.Commit();
}

}  // namespace dv::db
