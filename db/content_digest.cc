#include "db/content_digest.h"

#include <openssl/evp.h>
#include <sqlite3.h>

#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

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
constexpr std::array<TableOrder, 6> kTables = {{{"machines", "id"},
                                                {"artifacts", "id"},
                                                {"scenarios", "id"},
                                                {"runs", "id"},
                                                {"steps", "run_id, step"},
                                                {"attestations", "id"}}};

// Incremental SHA-256, so that a large DB is never held as one string.
class Sha256Stream {
 public:
  Sha256Stream() : context_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
    if (context_ == nullptr || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
      throw std::bad_alloc();
    }
  }
  void Update(std::string_view bytes) {
    if (EVP_DigestUpdate(context_.get(), bytes.data(), bytes.size()) != 1) throw std::bad_alloc();
  }
  std::string FinalHex() {
    std::array<unsigned char, 32> digest{};
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context_.get(), digest.data(), &length) != 1) throw std::bad_alloc();
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char byte : digest) {
      hex += kHex[byte >> 4];
      hex += kHex[byte & 0x0f];
    }
    return hex;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context_;
};

}  // namespace

std::string ContentDigestOf(const SqliteHandle& handle, DigestScope scope) {
  Transaction snapshot(handle, Transaction::Kind::kRead);
  Sha256Stream digest;
  digest.Update("detverify-content-digest v1\nschema_version " +
                std::to_string(handle.QueryInt("PRAGMA user_version", "reading the version")) +
                "\n");
  for (const TableOrder& table : kTables) {
    if (scope == DigestScope::kResultsOnly && std::string_view(table.name) == "attestations") {
      continue;
    }
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
          default:  // REAL or BLOB: never written by this library
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
