// Published hashes: what the rows of a scenario must show after a given step, for one artifact.
// A scenario's own `expect` list and a gate's --expect file both hold them; the verdict
// (verdict.h) checks each row against them at the step they name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dv::verdict {

// Rows whose artifact SHA-256 starts with `artifact` must show chains starting with `logits` and
// `tokens` after `steps` steps (hex prefixes; compared without regard to case).
struct ExpectedHashes {
  std::string artifact;
  int64_t steps = 0;
  std::string logits;
  std::string tokens;
};

// The `expect` list of a scenario's canonical text as the runner stores it
// (harness::CanonicalScenarioText); a text without one gives none.
std::vector<ExpectedHashes> PublishedHashes(const std::string& canonical_scenario_text);

}  // namespace dv::verdict
