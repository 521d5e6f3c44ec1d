// Opening a result DB for writing (create + migrate) or for reading (never writes the file).
// Internal to db/: RunStore, MergeDatabases and ContentDigest open files through these.
#pragma once

#include <chrono>
#include <string>

#include "db/sqlite_handle.h"

namespace dv::db {

enum class JournalMode {
  kWal,       // concurrent readers and writers across processes; the default for stores
  kRollback,  // a single private writer (a merge's temporary output)
};

enum class Creation {
  // A missing file is made beside its name with the full schema and put in place whole
  // (staged_file.h), so that a process killed meanwhile never leaves a DB without its schema.
  kAtomic,
  kInPlace,  // created where it is named (a private staged file)
};

// Opens `path` (created when missing, as `creation` says; ":memory:" allowed), checks it is a
// detverify DB of a known version before writing anything, sets the journal mode, synchronous=FULL
// and foreign_keys, and migrates it to NewestSchemaVersion(). In WAL mode the file returns to the
// rollback journal when its last connection closes. Throws DbError (see CheckSchema).
SqliteHandle OpenForWriting(const std::string& path, std::chrono::milliseconds lock_timeout,
                            JournalMode journal_mode, Creation creation = Creation::kAtomic);

// Opens an existing detverify DB read-only ("file:...?mode=ro"): the file is never written and
// no companion file is created (a WAL-mode file whose log does not exist is opened immutable;
// writers return their file to the rollback journal when the last one closes). An older schema is
// copied into memory and migrated there. Throws DbError for a missing file, an empty DB and
// everything CheckSchema refuses.
SqliteHandle OpenForReading(const std::string& path, std::chrono::milliseconds lock_timeout);

}  // namespace dv::db
