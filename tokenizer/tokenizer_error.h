#pragma once
#include "base/expected_error.h"

namespace dv::tok {

// An expected failure: a missing, unreadable, malformed or unsupported tokenizer.json, or a chat
// that the template cannot render. what() is one line naming the file (or input) and the problem.
class TokenizerError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

}  // namespace dv::tok
