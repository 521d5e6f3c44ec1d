// One digest for the content of a result DB, independent of how the file was written (insert
// order, page layout, journal mode): equal digests mean equal rows.
#pragma once

#include <string>

namespace dv::db {

class SqliteHandle;

enum class DigestScope {
  kAll,          // every table
  kResultsOnly,  // every table but attestations: what an attestation can sign without changing
};

// Lowercase hex SHA-256 over a canonical dump: a header line with the schema version, then per
// table (machines, artifacts, scenarios, runs, steps, float_logits, attestations) a "table
// <name>" line and one canonical JSON object per row ({column: value}, integers and strings,
// NULL as null, a blob as "sha256:<hex>"), rows in primary-key order. A DB whose float_logits
// is empty digests as schema 1 (version 1, no float_logits table), so migrating a DB never
// changes its digest. Opens `path` read-only; throws DbError as RunStore::OpenReadOnly does.
std::string ContentDigest(const std::string& path, DigestScope scope = DigestScope::kAll);

// The same digest over an open connection (internal: RunStore::ContentDigest).
std::string ContentDigestOf(const SqliteHandle& handle, DigestScope scope);

}  // namespace dv::db
