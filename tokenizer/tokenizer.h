#pragma once
// Byte-level BPE tokenizers (Qwen3's, SmolLM2's) with exactly the Hugging Face `tokenizers`
// behaviour: added tokens first, NFC where the model normalises, the model's pre-tokenizer
// (pretokenizer.h), GPT-2 byte alphabet, rank-ordered merges. Read from a Hugging Face
// tokenizer.json or built from a TokenizerSpec (a GGUF file's vocabulary: gguf/gguf_tokenizer.h).
// Character data is frozen at Unicode 15.0 (see README.md).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_error.h"
#include "tokenizer/tokenizer_json.h"

namespace dv::tok {

// Whether Decode writes the text of added tokens marked "special" (<|im_start|>, <|endoftext|>...).
// Non-special added tokens such as <think> are always written.
enum class SpecialTokens { kKeep, kSkip };

// The JSON text of a tokenizer file: `path` as is, or inflated when it ends in ".xz" (the
// bundled copy). Throws TokenizerError naming the file if it is missing, unreadable or corrupt.
std::string ReadTokenizerText(const std::string& path);

// Immutable after loading; copies share the loaded model; every method is thread-safe.
class Tokenizer {
 public:
  // Reads `path` (ReadTokenizerText). Throws TokenizerError naming the file if it is missing,
  // unreadable, not JSON, or not a byte-level BPE tokenizer with the Qwen2 pre-tokenizer.
  static Tokenizer FromFile(const std::string& path);
  // Same from the file's contents; `name` labels errors.
  static Tokenizer FromJson(std::string_view json_text, const std::string& name);
  // From an already parsed vocabulary, merges, added tokens and pipeline. Throws TokenizerError
  // ("<name>: <problem>") if a byte-level token is missing, a merge uses an unknown token or an
  // added token reuses the id of another vocabulary token.
  static Tokenizer FromSpec(TokenizerSpec spec, const std::string& name);

  // Token ids of `text`, equal to Hugging Face's Tokenizer.encode(s).ids (nothing is prepended or
  // appended). Added tokens typed in the text ("<think>") become their ids. `text` may be any
  // bytes: ill-formed UTF-8 is first repaired as Python's bytes.decode("utf-8", errors="replace")
  // does (one U+FFFD per maximal ill-formed subpart). O(size) for bounded word lengths.
  std::vector<int32_t> Encode(std::string_view text) const;

  // Concatenated bytes of the tokens, then ill-formed UTF-8 replaced as above: equal to Hugging
  // Face's decode(ids, skip_special_tokens=(special == kSkip)). Ids outside [0, VocabSize()) and
  // unused ids are skipped, as Hugging Face does. Decode(Encode(s)) == NFC(s) for valid UTF-8 s.
  std::string Decode(std::span<const int32_t> ids,
                     SpecialTokens special = SpecialTokens::kKeep) const;

  // Id of a vocabulary string in its byte-level spelling ("Ġthe") or of an added token's content;
  // -1 if absent.
  int32_t TokenId(std::string_view token) const;
  // The string of `id` as tokenizer.json spells it ("Ġthe", "<|im_end|>"); empty if `id` is unused.
  std::string_view TokenText(int32_t id) const;
  // The raw bytes `id` decodes to (" the"); may be part of a UTF-8 sequence; empty if unused.
  std::string_view TokenBytes(int32_t id) const;
  // One past the largest id (151,669 for Qwen3: 151,643 BPE tokens + 26 added tokens).
  int32_t VocabSize() const;
  // Whether `id` is an added token marked special (dropped by Decode(..., kSkip)).
  bool IsSpecial(int32_t id) const;
  PreTokenizer pre_tokenizer() const;

 private:
  struct Model;
  explicit Tokenizer(std::shared_ptr<const Model> model);
  std::shared_ptr<const Model> model_;
};

// Where the Qwen3 tokenizer.json is: $DETVERIFY_TOKENIZER if set and non-empty, else the path fixed
// at configure time, ${DETVERIFY_SHARED_DIR}/qwen3/tokenizer.json. Does not check that it exists.
std::string DefaultTokenizerPath();

}  // namespace dv::tok
