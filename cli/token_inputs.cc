#include "cli/token_inputs.h"

#include <filesystem>
#include <string_view>

#include "base/sha256.h"
#include "cli/command.h"
#include "engine/safetensors.h"
#include "gguf/model_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace dv::cli {

std::string TokenizerFor(const std::string& model_dir, const std::string& fallback) {
  const std::string own = gguf::TokenizerPathFor(model_dir);
  if (own != tok::DefaultTokenizerPath()) return own;
  return fallback.empty() ? own : fallback;
}

TokenText TokenizeTextFile(const std::string& path, const std::string& tokenizer_file,
                           int64_t vocab) {
  return TokenizeTextFile(path, gguf::LoadModelTokenizer(tokenizer_file).tokenizer, tokenizer_file,
                          vocab);
}

TokenText TokenizeTextFile(const std::string& path, const tok::Tokenizer& tokenizer,
                           const std::string& label, int64_t vocab) {
  const MappedFile file = MappedFile::Open(path);
  if (file.bytes().size() > (size_t{1} << 30)) throw ArtifactError(path + ": larger than 1 GiB");
  TokenText t;
  t.ids = tokenizer.Encode(
      std::string_view(reinterpret_cast<const char*>(file.bytes().data()), file.bytes().size()));
  for (int32_t id : t.ids) {
    if (id < 0 || id >= vocab) {
      throw UsageError(label + ": gives token id " + std::to_string(id) + " for " + path +
                       ", outside the model's vocabulary of " + std::to_string(vocab) +
                       " (pass --tokenizer FILE)");
    }
  }
  t.tokenizer = label;
  t.sha256 = Sha256Hex(file.bytes());
  return t;
}

}  // namespace dv::cli
