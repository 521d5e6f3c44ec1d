#include "db/content_digest.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/sha256.h"
#include "db/db_error.h"
#include "db/open_database.h"
#include "db/run_store.h"
#include "db/sqlite_handle.h"

namespace dv::db {
namespace {

struct TableOrder {
  const char* name;
  const char* primary_key;
};

// Every table, in a fixed order, with the columns that order its rows.
constexpr std::array<TableOrder, 7> kTables = {{{"machines", "id"},
                                                {"artifacts", "id"},
                                                {"scenarios", "id"},
                                                {"runs", "id"},
                                                {"steps", "run_id, step"},
                                                {"float_logits", "run_id"},
                                                {"attestations", "id"}}};

}  // namespace

std::string ContentDigestOf(const SqliteHandle& handle, DigestScope scope) {
  Transaction snapshot(handle, Transaction::Kind::kRead);
  Sha256 digest;
  // A DB without float logits digests as schema 1 did, without the float_logits table: the
  // migration that adds the (empty) table changes no content, so what was signed before it
  // still verifies after it.
  const bool float_logits =
      handle.QueryInt("SELECT count(*) FROM float_logits", "reading float_logits") > 0;
  const int64_t version = handle.QueryInt("PRAGMA user_version", "reading the version");
  digest.Update("detverify-content-digest v1\nschema_version " +
                std::to_string(float_logits ? version : std::min<int64_t>(version, 1)) + "\n");
  for (const TableOrder& table : kTables) {
    if (scope == DigestScope::kResultsOnly && std::string_view(table.name) == "attestations") {
      continue;
    }
    if (!float_logits && std::string_view(table.name) == "float_logits") continue;
    digest.Update(std::string("table ") + table.name + "\n");
    Statement rows = handle.Prepare(std::string("SELECT * FROM ") + table.name + " ORDER BY " +
                                    table.primary_key);
    while (rows.Step()) {
      nlohmann::json row = nlohmann::json::object();
      for (int column = 0; column < rows.ColumnCount(); ++column) {
        const std::string name = rows.ColumnName(column);
        switch (rows.ColumnType(column)) {
          case SQLITE_INTEGER:
            row[name] = rows.ColumnInt(column);
            break;
          case SQLITE_TEXT:
            row[name] = rows.ColumnText(column);
            break;
          case SQLITE_NULL:
            row[name] = nullptr;
            break;
          case SQLITE_BLOB:  // float_logits.logits: through its SHA-256
            row[name] = "sha256:" + Sha256Hex(rows.ColumnBlob(column));
            break;
          default:  // REAL: never written by this library
            throw DbError(handle.Path() + ": unexpected non-integer, non-text value in " +
                          table.name + "." + name);
        }
      }
      try {
        digest.Update(row.dump() + "\n");
      } catch (const nlohmann::json::exception&) {
        throw DbError(handle.Path() + ": text that is not UTF-8 in table " + table.name);
      }
    }
  }
  snapshot.Commit();
  return digest.FinalHex();
}

std::string ContentDigest(const std::string& path, DigestScope scope) {
  return ContentDigestOf(OpenForReading(path, kDefaultLockTimeout), scope);
}

}  // namespace dv::db
