// A Hugging Face config.json (checkpoint/hf_config.h) on arbitrary bytes.
#include <string>

#include "base/expected_error.h"
#include "checkpoint/hf_config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)dv::ParseHfConfig(dv::fuzz::AsText(data, size), "config.json");
  } catch (const dv::ExpectedError&) {
  }
  return 0;
}
