// Verification of what a result DB holds: every row as the library would have written it. A
// verification tool must notice when its own records were altered, so every reader (report,
// gate, attest, merge) runs these checks before it trusts a file.
#pragma once

#include <string>

#include "db/merge.h"

namespace dv::db {

class SqliteHandle;

// Row counts of a verified DB (the same counts a merge reports).
using VerifySummary = MergeSummary;

// Checks, in one read snapshot (the caller's transaction if one is open): every machine, artifact,
// scenario and attestation row against its id and the rules of records.h; every run with its steps
// (content id against its rows, n_steps against the stored steps, steps numbered 0..n_steps-1,
// final chains equal to the last step's, canonical config_json, known engine/backend/status, the
// rows it refers to present); no step without a run; and no two chains that agree at a step after
// disagreeing at the step before (a hash chain cannot re-converge: such rows were edited). Throws
// DbError
// "<path>: run <id> (configuration '<name>'): <problem>" (or "machine <id>", ...) for the first
// problem found.
VerifySummary VerifyContentOf(const SqliteHandle& handle);

// `detverify verify-db`: opens `path` read-only, runs PRAGMA integrity_check and
// foreign_key_check, then VerifyContentOf. Throws DbError naming the file and the problem.
VerifySummary VerifyDatabase(const std::string& path);

}  // namespace dv::db
