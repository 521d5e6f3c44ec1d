// The safetensors container (engine/safetensors.h) on arbitrary bytes: the header's length, its
// JSON, every tensor's dtype, shape and offsets; then each integer tensor decoded.
#include "base/expected_error.h"
#include "engine/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto tensors = dv::ParseSafetensors({data, size}, "fuzz.safetensors");
    for (const auto& [name, view] : tensors) {
      if (dv::IsIntegerDType(view.dtype)) (void)dv::DecodeIntTensor(view);
    }
  } catch (const dv::ExpectedError&) {
  }
  return 0;
}
