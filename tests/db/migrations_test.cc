// Opening, creating and migrating result DBs; refusing files that are not ours
// (db/migrations.h, db/open_database.h, RunStore::Open/OpenReadOnly).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "db/migrations.h"
#include "db/run_store.h"
#include "tests/db/test_fixtures.h"

namespace dv::db {
namespace {

using testing::RawSql;
using testing::ReadBytes;
using testing::ScratchDir;
using testing::WriteBytes;

// Expects `open` to throw a DbError whose message is one line naming `path` and containing
// `needle`.
template <typename Open>
void ExpectRefused(Open open, const std::string& path, const std::string& needle) {
  try {
    open();
    ADD_FAILURE() << path << " was accepted";
  } catch (const DbError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(DbMigrations, EmbeddedMigrationsAreNumberedFromOne) {
  ASSERT_FALSE(Migrations().empty());
  int expected = 1;
  for (const EmbeddedMigration& migration : Migrations()) {
    EXPECT_EQ(migration.version, expected);
    EXPECT_EQ(std::string(migration.name).substr(0, 4),
              std::string(4 - std::to_string(expected).size(), '0') + std::to_string(expected));
    EXPECT_NE(std::string(migration.sql).find("CREATE"), std::string::npos);
    ++expected;
  }
  EXPECT_EQ(NewestSchemaVersion(), expected - 1);
}

TEST(DbMigrations, InMemoryDbStartsAtTheNewestVersion) {
  const RunStore store = RunStore::Open(":memory:");
  EXPECT_EQ(store.SchemaVersion(), NewestSchemaVersion());
  EXPECT_TRUE(store.Scenarios().empty());
  EXPECT_TRUE(store.Attestations().empty());
}

TEST(DbMigrations, NewFileRecordsVersionApplicationIdAndWal) {
  ScratchDir dir("migrate");
  const std::string path = dir.File("new.db");
  {
    const RunStore store = RunStore::Open(path);
    // WAL while a writer has it open; the rollback journal once the last one has closed it.
    EXPECT_EQ(RawSql(path, "PRAGMA journal_mode"), "wal");
  }
  EXPECT_EQ(RawSql(path, "PRAGMA user_version"), std::to_string(NewestSchemaVersion()));
  EXPECT_EQ(RawSql(path, "PRAGMA application_id"), std::to_string(kApplicationId));
  EXPECT_EQ(RawSql(path, "PRAGMA journal_mode"), "delete");
  for (const char* table :
       {"machines", "artifacts", "scenarios", "runs", "steps", "attestations"}) {
    EXPECT_EQ(RawSql(path, std::string("SELECT count(*) FROM sqlite_schema WHERE name = '") +
                               table + "'"),
              "1")
        << table;
  }
}

TEST(DbMigrations, ReopeningKeepsContent) {
  ScratchDir dir("reopen");
  const std::string path = dir.File("results.db");
  std::string id;
  {
    RunStore store = RunStore::Open(path);
    id = store.RecordRun(testing::MakeRun("int8-cpu-b1", 8));
  }
  const RunStore store = RunStore::Open(path);
  EXPECT_EQ(store.SchemaVersion(), NewestSchemaVersion());
  ASSERT_TRUE(store.Run(id).has_value());
  EXPECT_EQ(store.Run(id)->steps.size(), 8u);
  const RunStore reader = RunStore::OpenReadOnly(path);
  EXPECT_TRUE(reader.Run(id).has_value());
}

TEST(DbMigrations, NewerSchemaVersionIsRefusedWithoutWriting) {
  ScratchDir dir("newer");
  const std::string path = dir.File("future.db");
  { RunStore::Open(path); }
  RawSql(path, "PRAGMA user_version = " + std::to_string(NewestSchemaVersion() + 1));
  const std::string before = ReadBytes(path);
  ExpectRefused([&] { RunStore::Open(path); }, path, "newer than this build");
  ExpectRefused([&] { RunStore::OpenReadOnly(path); }, path, "newer than this build");
  ExpectRefused([&] { ContentDigest(path); }, path, "newer than this build");
  EXPECT_EQ(ReadBytes(path), before);
}

TEST(DbMigrations, GarbageFileIsRefusedWithoutWriting) {
  ScratchDir dir("garbage");
  const std::string path = dir.File("garbage.db");
  std::string garbage;
  for (int i = 0; i < 8192; ++i) garbage += static_cast<char>((i * 37 + 11) % 251);
  WriteBytes(path, garbage);
  ExpectRefused([&] { RunStore::Open(path); }, path, "not an SQLite database");
  ExpectRefused([&] { RunStore::OpenReadOnly(path); }, path, "not an SQLite database");
  EXPECT_EQ(ReadBytes(path), garbage);
}

TEST(DbMigrations, TextFileIsRefused) {
  ScratchDir dir("text");
  const std::string path = dir.File("notes.txt");
  WriteBytes(path, "these are not the results you are looking for\n");
  ExpectRefused([&] { RunStore::Open(path); }, path, "not an SQLite database");
}

TEST(DbMigrations, OtherApplicationsDatabaseIsRefused) {
  ScratchDir dir("foreign");
  const std::string path = dir.File("foreign.db");
  RawSql(path, "CREATE TABLE things (x INTEGER)");
  const std::string before = ReadBytes(path);
  ExpectRefused([&] { RunStore::Open(path); }, path, "not a detverify database");
  ExpectRefused([&] { RunStore::OpenReadOnly(path); }, path, "not a detverify database");
  EXPECT_EQ(ReadBytes(path), before);

  const std::string versioned = dir.File("versioned.db");
  RawSql(versioned, "CREATE TABLE things (x INTEGER); PRAGMA user_version = 1");
  ExpectRefused([&] { RunStore::Open(versioned); }, versioned, "not a detverify database");
}

TEST(DbMigrations, MissingTableIsRefused) {
  ScratchDir dir("missing-table");
  const std::string path = dir.File("broken.db");
  { RunStore::Open(path); }
  RawSql(path, "DROP TABLE attestations");
  ExpectRefused([&] { RunStore::Open(path); }, path, "no table 'attestations'");
}

TEST(DbMigrations, CorruptFileIsRefused) {
  ScratchDir dir("corrupt");
  const std::string path = dir.File("corrupt.db");
  {
    RunStore store = RunStore::Open(path);
    for (int i = 0; i < 20; ++i) store.RecordRun(testing::MakeRun("run-" + std::to_string(i), 64));
  }
  // Keep the 100-byte header, overwrite the schema page and everything after it.
  std::string bytes = ReadBytes(path);
  ASSERT_GT(bytes.size(), 8192u);
  for (size_t i = 100; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131) % 256);
  WriteBytes(path, bytes);
  ExpectRefused(
      [&] {
        RunStore store = RunStore::Open(path);
        store.ContentDigest();
      },
      path, "corrupt");
}

TEST(DbMigrations, UnopenablePathIsRefused) {
  const std::string path = "/nonexistent-detverify-dir/sub/results.db";
  ExpectRefused([&] { RunStore::Open(path); }, path, "cannot open");
  ExpectRefused([&] { RunStore::OpenReadOnly(path); }, path, "cannot open");
}

TEST(DbMigrations, ReadOnlyOpenNeverCreatesAFile) {
  ScratchDir dir("read-only");
  const std::string path = dir.File("absent.db");
  ExpectRefused([&] { RunStore::OpenReadOnly(path); }, path, "cannot open");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(DbMigrations, EmptyFileBecomesANewDatabase) {
  ScratchDir dir("empty");
  const std::string path = dir.File("empty.db");
  WriteBytes(path, "");
  ExpectRefused([&] { RunStore::OpenReadOnly(path); }, path, "not a detverify database");
  const RunStore store = RunStore::Open(path);
  EXPECT_EQ(store.SchemaVersion(), NewestSchemaVersion());
}

}  // namespace
}  // namespace dv::db
