// The channel for expected failures: bad input a user can fix or a condition of the machine
// (malformed YAML, a truncated or hostile artifact, a locked or corrupt DB, a bad signature, a
// FIFO where a file belongs). Each is an ExpectedError carrying the process exit code it maps to;
// what() is one line that names the file and the problem. Broken invariants are DV_CHECK
// (base/check.h) instead, and any other exception reaching main is an internal error.
//
// Exit codes of both binaries (README.md, docs/architecture.md):
//   0  success
//   1  a negative verdict: int8 rows disagree (gate), a verification failed (attest verify),
//      a configuration of `run` crashed, timed out or failed
//   2  an expected failure: usage, bad input, I/O, a locked or foreign DB
//   3  an internal error: a bug in detverify (an exception that is not an ExpectedError)
//   134 (SIGABRT)  a failed DV_CHECK, after its one-line message on stderr
#pragma once

#include <stdexcept>
#include <string>

namespace dv {

inline constexpr int kExitOk = 0;
inline constexpr int kExitVerdict = 1;
inline constexpr int kExitError = 2;
inline constexpr int kExitInternal = 3;

class ExpectedError : public std::runtime_error {
 public:
  explicit ExpectedError(const std::string& what, int exit_code = kExitError)
      : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

// A file that cannot be read or written as asked: missing, not a regular file (a FIFO, a
// device, a folder), larger than the caller's bound, or an I/O error. "<path>: <problem>".
class FileError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

}  // namespace dv
