#pragma once
// Reading and validating a Hugging Face tokenizer.json. Only byte-level BPE as Qwen2/Qwen3 and
// SmolLM/StarCoder write it is accepted: a BPE model, NFC or no normaliser, the kQwen2 or
// kDigitsGpt2 pre-tokenizer of pretokenizer.h, the ByteLevel decoder. Anything else is rejected
// rather than tokenised differently from Hugging Face.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/pretokenizer.h"

namespace dv::tok {

struct TokenizerSpec {
  std::vector<std::pair<std::string, int32_t>> vocab;       // byte-level string, id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedToken> added_tokens;
  bool nfc = false;  // normalizer is NFC (else none)
  PreTokenizer pre_tokenizer = PreTokenizer::kQwen2;
  // A vocabulary may lack some of the 256 byte-level tokens (SmolLM2 has no token for bytes 0x04,
  // 0x06 and a few more). Hugging Face's BPE without an unk_token then drops such a byte; with
  // `skip_missing_bytes` false a missing byte token is a load error instead.
  bool skip_missing_bytes = false;
};

// Parses `json_text`. Both merge spellings are accepted: "a b" strings and ["a", "b"] pairs.
// Throws TokenizerError("<name>: <problem>") on malformed or unsupported content.
TokenizerSpec ParseTokenizerJson(std::string_view json_text, const std::string& name);

}  // namespace dv::tok
