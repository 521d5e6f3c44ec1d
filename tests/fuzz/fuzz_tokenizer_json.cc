// tokenizer.json loading (tokenizer/tokenizer.h) on arbitrary bytes, then encode and decode with
// whatever tokenizer loads.
#include <string>
#include <vector>

#include "base/expected_error.h"
#include "tests/fuzz/fuzz_support.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const dv::tok::Tokenizer t =
        dv::tok::Tokenizer::FromJson(dv::fuzz::AsText(data, size), "fuzz.json");
    const std::vector<int32_t> ids = t.Encode("Hello, world! 123 <think>\xff\n  x");
    (void)t.Decode(ids);
  } catch (const dv::ExpectedError&) {
  }
  return 0;
}
