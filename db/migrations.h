// Schema versions: the numbered files db/migrations/NNNN_words.sql, embedded at build time, are
// applied in order and PRAGMA user_version records the last one applied (internal to db/).
#pragma once

#include <cstdint>
#include <span>

namespace dv::db {

class SqliteHandle;

// One numbered file of db/migrations/, compiled in (db/embed_migrations.cmake).
struct EmbeddedMigration {
  int version;       // the NNNN of the file name; PRAGMA user_version after applying it
  const char* name;  // the file name
  const char* sql;   // the file's text
};

// PRAGMA application_id of every detverify DB: "dvDB" in ASCII.
inline constexpr int32_t kApplicationId = 0x64764442;

// Every embedded migration, versions 1, 2, ... in order.
std::span<const EmbeddedMigration> Migrations();

// The newest schema version this build knows (the last migration's number).
int NewestSchemaVersion();

// The DB's schema version after checking it is detverify's: 0 for an empty DB (no tables),
// otherwise 1..NewestSchemaVersion(). Throws DbError "<path>: ..." without writing for a file that
// is not SQLite, an SQLite DB of another application, a schema newer than this build, or a
// detverify DB with tables missing.
int CheckSchema(const SqliteHandle& handle);

// Brings the DB to NewestSchemaVersion() in one write transaction (a no-op when it is there;
// safe against another process migrating the same file at the same time).
void Migrate(const SqliteHandle& handle);

}  // namespace dv::db
