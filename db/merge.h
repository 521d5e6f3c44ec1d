// Merging result DBs from several machines into one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dv::db {

// Row counts of a merged DB.
struct MergeSummary {
  int64_t machines = 0;
  int64_t artifacts = 0;
  int64_t scenarios = 0;
  int64_t runs = 0;
  int64_t steps = 0;
  int64_t attestations = 0;
};

// Writes the union of the rows of `inputs` to `out_path`. When `out_path` already exists it is
// one more input: the result replaces it atomically (rename), so merging a new machine's DB
// into a fleet DB is `MergeDatabases({"new.db"}, "fleet.db")`. Idempotent and commutative
// (ContentDigest of the result does not depend on input order or repetition). Inputs are opened
// read-only and never written. Every row is re-validated and its id recomputed. Throws DbError,
// leaving `out_path` as it was, for an input that is missing, not a detverify DB, of a newer
// schema, or tampered (id not matching content), for a conflicting duplicate (same id, different
// content), and when `out_path` is in use by another process. Not for a DB being written while
// it is merged into (its writers would keep writing to the replaced file).
MergeSummary MergeDatabases(const std::vector<std::string>& inputs, const std::string& out_path);

}  // namespace dv::db
