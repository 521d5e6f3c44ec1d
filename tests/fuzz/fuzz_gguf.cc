// The GGUF reader (gguf/gguf_file.h) on arbitrary bytes, then what is built from a file that
// opens: the tokenizer it carries and the Llama model's hyper-parameters and tensor table.
#include "base/expected_error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_tokenizer.h"
#include "gguf/llama_model.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    dv::gguf::GgufFile file = dv::gguf::GgufFile::FromBytes({data, size}, "fuzz.gguf");
    try {
      const dv::gguf::GgufTokenizer t = dv::gguf::LoadGgufTokenizer(file);
      (void)t.tokenizer.Encode("Hello, world! 123");
    } catch (const dv::ExpectedError&) {
    }
    (void)dv::gguf::LlamaModel::FromFile(std::move(file));
  } catch (const dv::ExpectedError&) {
  }
  return 0;
}
