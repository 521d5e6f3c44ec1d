// Token sequences for the fidelity verbs (compare, ppl) and prepare: a text file tokenized with
// the model's tokenizer (its folder's tokenizer.json, else Qwen3's), or a JSON file of token-id
// lists; every id checked against the model's vocabulary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dv::tok {
class Tokenizer;
}

namespace dv::cli {

struct TokenText {
  std::vector<int32_t> ids;
  std::string tokenizer;  // the tokenizer.json used
  std::string sha256;     // of the text file
};

// The tokenizer for a model folder: <model_dir>/tokenizer.gguf (kept by prepare --gguf) or
// tokenizer.json when present, else `fallback` when given, else the default Qwen3 tokenizer.
// (--tokenizer FILE, when given, is used as is.)
std::string TokenizerFor(const std::string& model_dir, const std::string& fallback = "");

// The whole text tokenized (nothing added). Throws UsageError for an id outside [0, vocab) (a
// tokenizer bigger than the model), ArtifactError / TokenizerError for unreadable files.
// `tokenizer_file` is a tokenizer.json or a GGUF (gguf/model_tokenizer.h).
TokenText TokenizeTextFile(const std::string& path, const std::string& tokenizer_file,
                           int64_t vocab);
// The same with a tokenizer already loaded (e.g. a GGUF's); `label` names it in errors and in
// TokenText::tokenizer.
TokenText TokenizeTextFile(const std::string& path, const tok::Tokenizer& tokenizer,
                           const std::string& label, int64_t vocab);

}  // namespace dv::cli
