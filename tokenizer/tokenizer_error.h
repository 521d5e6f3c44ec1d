#pragma once
#include <stdexcept>

namespace dv::tok {

// An expected failure: a missing, unreadable, malformed or unsupported tokenizer.json, or a chat
// that the template cannot render. what() is one line naming the file (or input) and the problem.
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dv::tok
