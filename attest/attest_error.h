// The one exception type of attest/: every expected failure (unreadable or wrong key, malformed
// envelope, bad signature, statement mismatch) surfaces as AttestError with a one-line message
// "<file>: <problem>" that the CLI prints as-is.
#pragma once

#include <string>

#include "base/expected_error.h"

namespace dv::attest {

class AttestError : public ExpectedError {
 public:
  // `message` is flattened to one line (newlines become spaces).
  explicit AttestError(const std::string& message);
};

}  // namespace dv::attest
