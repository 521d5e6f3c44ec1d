#include "attest/attest_error.h"

#include <algorithm>

namespace dv::attest {
namespace {

// File names and OpenSSL reason strings are interpolated into messages; keep them on one line so
// the CLI's error output stays one line per failure.
std::string OneLine(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return text;
}

}  // namespace

AttestError::AttestError(const std::string& message) : ExpectedError(OneLine(message)) {}

}  // namespace dv::attest
