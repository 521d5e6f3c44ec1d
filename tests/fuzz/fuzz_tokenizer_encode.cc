// Qwen3's tokenizer (the real tokenizer.json, loaded once) encoding arbitrary bytes, ill-formed
// UTF-8 included; every id must be in the vocabulary, and decoding the ids must not fail.
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_support.h"
#include "tokenizer/tokenizer.h"

namespace {

std::optional<dv::tok::Tokenizer> g_tokenizer;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_tokenizer.emplace(dv::tok::Tokenizer::FromFile(dv::tok::DefaultTokenizerPath()));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<int32_t> ids = g_tokenizer->Encode(dv::fuzz::AsText(data, size));
  for (int32_t id : ids) {
    if (id < 0 || id >= g_tokenizer->VocabSize()) std::abort();
  }
  (void)g_tokenizer->Decode(ids);
  return 0;
}
