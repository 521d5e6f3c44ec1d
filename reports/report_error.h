// The one exception type of reports/: every expected failure (an unreadable or malformed --expect
// file, a scenario selector that matches nothing, a DB whose rows cannot be reported) surfaces as
// ReportError with a one-line message "<file>: <problem>" that the CLI prints as-is.
#pragma once

#include <string>

#include "base/expected_error.h"

namespace dv::reports {

class ReportError : public ExpectedError {
 public:
  // `message` is flattened to one line (newlines become spaces).
  explicit ReportError(const std::string& message);
};

}  // namespace dv::reports
