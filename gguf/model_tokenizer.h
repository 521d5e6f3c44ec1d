// The tokenizer (and chat template) a model folder or file speaks: one rule for every verb that
// turns text into ids for a model. A GGUF carries both; an int artifact prepared from one keeps
// them in its tokenizer.gguf (gguf/gguf_writer.h); any other folder has its tokenizer.json (or
// the default Qwen3 one) and the Qwen3 chat template.
#pragma once

#include <optional>
#include <string>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_error.h"

namespace dv::gguf {

struct ModelTokenizer {
  tok::Tokenizer tokenizer;
  std::string path;  // the file read: a tokenizer.json, a tokenizer.gguf or a model's GGUF
  bool from_gguf = false;
  // The chat template: the GGUF's built-in renderer when it has one, Qwen3's for tokenizer.json.
  // Empty for a GGUF whose template has no renderer (Chat() then names the problem).
  std::optional<tok::ChatTemplate> chat;
  std::string chat_problem;  // why `chat` is empty, naming the file
  // The template, or throws tok::TokenizerError naming the file and why there is none.
  const tok::ChatTemplate& Chat() const;
};

// <dir>/tokenizer.gguf, else <dir>/tokenizer.json, else the default Qwen3 tokenizer.json (also
// for an empty dir).
std::string TokenizerPathFor(const std::string& model_dir);

// Loads a tokenizer.json or a GGUF (by its magic bytes). Throws tok::TokenizerError /
// GgufError naming the file.
ModelTokenizer LoadModelTokenizer(const std::string& path);

}  // namespace dv::gguf
