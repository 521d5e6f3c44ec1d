// What the fuzz targets share: a private scratch folder on tmpfs for the loaders that take a path,
// and the one rule of every target: an ExpectedError (bad input, reported on one line) is the
// right answer to a hostile input; anything else escaping (another exception, a failed DV_CHECK,
// a sanitizer report, a hang) is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace dv::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A folder of this process's own, "/dev/shm/dv-fuzz-<pid>" (or under $TMPDIR when there is no
// /dev/shm), created on first use.
const std::string& ScratchDir();

// Writes `bytes` to `path` (truncating); aborts on failure, which is the harness's, not the
// input's.
void WriteScratchFile(const std::string& path, std::string_view bytes);

}  // namespace dv::fuzz
