// The one exception type of db/: every expected failure (unreadable, corrupt or foreign file,
// schema newer than this build, lock not obtained in time, invalid record, conflicting duplicate
// on merge) surfaces as DbError with a one-line message "<file>: <problem>" that the CLI prints
// as-is. Broken invariants inside db/ are not DbErrors.
#pragma once

#include <string>

#include "base/expected_error.h"

namespace dv::db {

class DbError : public ExpectedError {
 public:
  // `message` is flattened to one line (newlines become spaces).
  explicit DbError(const std::string& message);
};

}  // namespace dv::db
