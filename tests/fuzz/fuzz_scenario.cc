// The scenario YAML parser and its schema (harness/scenario.h) on arbitrary text, and the
// canonical JSON of every scenario it accepts.
#include <string>

#include "base/expected_error.h"
#include "harness/scenario.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const dv::harness::Scenario s =
        dv::harness::ParseScenario(std::string(dv::fuzz::AsText(data, size)), "fuzz.yaml");
    (void)dv::harness::CanonicalScenarioText(s);
  } catch (const dv::ExpectedError&) {
  }
  return 0;
}
