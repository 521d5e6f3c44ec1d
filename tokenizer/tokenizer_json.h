#pragma once
// Reading and validating a Hugging Face tokenizer.json. Only what Qwen2/Qwen3 use is accepted:
// a BPE model, NFC or no normaliser, the Qwen2 split regex + ByteLevel pre-tokenizer, the ByteLevel
// decoder. Anything else is rejected rather than tokenised differently from Hugging Face.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"

namespace dv::tok {

struct TokenizerSpec {
  std::vector<std::pair<std::string, int32_t>> vocab;       // byte-level string, id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedToken> added_tokens;
  bool nfc = false;  // normalizer is NFC (else none)
};

// Parses `json_text`. Both merge spellings are accepted: "a b" strings and ["a", "b"] pairs.
// Throws TokenizerError("<name>: <problem>") on malformed or unsupported content.
TokenizerSpec ParseTokenizerJson(std::string_view json_text, const std::string& name);

}  // namespace dv::tok
