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
// one more input and receives the new rows in one write transaction on the file itself, under
// the same lock as RunStore::RecordRun: processes recording into it meanwhile, and other merges
// into it, all land. A new `out_path` appears complete or not at all (link(2) of a finished
// temporary file). Idempotent and commutative (ContentDigest of the result does not depend on
// input order or repetition). Inputs are opened read-only and never written; every input, and
// an existing output, is verified first (VerifyContentOf). Throws DbError, leaving `out_path` as
// it was, for an input that is missing, not a detverify DB, of a newer schema, or tampered, for
// a conflicting duplicate (same id, different content), and for no write lock within the lock
// timeout. A merge killed at any moment leaves `out_path` as it was or fully merged; its
// temporary file is removed by the next merge into the same output.
MergeSummary MergeDatabases(const std::vector<std::string>& inputs, const std::string& out_path);

}  // namespace dv::db
