#pragma once
// The tokenizer and chat template a GGUF file carries (tokenizer.ggml.* and
// tokenizer.chat_template), as the project's byte-level BPE (tokenizer/): the same ids Hugging Face
// `tokenizers` gives with the model's own tokenizer.json pipeline.
//
// Supported: tokenizer.ggml.model "gpt2" (byte-level BPE) with tokenizer.ggml.pre "smollm"
// (SmolLM/SmolLM2: Digits then the GPT-2 split, no normaliser; tokenizer/pretokenizer.h). Tokens of
// type CONTROL (3) become special added tokens and USER_DEFINED (4) non-special added tokens, as
// transformers' GGUF loader adds them (only those spelled in the byte alphabet); every other type
// is a plain vocabulary entry. Any other
// model or pre-tokenizer is a GgufError, not a tokenizer that would give other ids.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "gguf/gguf_file.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace dv::gguf {

struct GgufTokenizer {
  explicit GgufTokenizer(tok::Tokenizer t) : tokenizer(std::move(t)) {}

  tok::Tokenizer tokenizer;
  std::string model;     // tokenizer.ggml.model: "gpt2"
  std::string pre;       // tokenizer.ggml.pre: "smollm"
  int32_t bos_id = -1;   // tokenizer.ggml.bos_token_id, -1 if absent
  int32_t eos_id = -1;   // tokenizer.ggml.eos_token_id
  int32_t unk_id = -1;   // tokenizer.ggml.unknown_token_id
  int32_t pad_id = -1;   // tokenizer.ggml.padding_token_id
  bool add_bos = false;  // tokenizer.ggml.add_bos_token: callers prepend bos_id when true
  bool add_eos = false;  // tokenizer.ggml.add_eos_token
  std::string chat_template_source;       // tokenizer.chat_template, "" if absent
  std::optional<tok::ChatTemplate> chat;  // the built-in renderer of that template, if any
};

// The vocabulary, merges and added tokens of `file` as a TokenizerSpec (GgufError for an
// unsupported or inconsistent tokenizer: a token list that is not an ARRAY of STRING, a
// token_type list of another length, a duplicate token, a merge that is not "a b").
tok::TokenizerSpec GgufTokenizerSpec(const GgufFile& file);

// The tokenizer of `file`. Throws GgufError for metadata problems, TokenizerError (naming the
// file) for a vocabulary the BPE cannot use. A chat template this project does not render leaves
// `chat` empty; RequireChatTemplate turns that into the error to show.
GgufTokenizer LoadGgufTokenizer(const GgufFile& file);

// `t.chat`, or GgufError naming the file: no template, or an unsupported one (and why).
const tok::ChatTemplate& RequireChatTemplate(const GgufTokenizer& t, const GgufFile& file);

}  // namespace dv::gguf
