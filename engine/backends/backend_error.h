// BackendError: a backend that cannot be had here -- an unknown name, one this build or machine
// lacks, an ISA level the CPU cannot run. An expected failure (the user asked for it), so it maps
// to exit code 2 with its one-line message.
#pragma once

#include "base/expected_error.h"

namespace dv {

class BackendError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

}  // namespace dv
