#include "gguf/model_tokenizer.h"

#include <filesystem>

#include "gguf/gguf_checkpoint.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_tokenizer.h"
#include "gguf/gguf_writer.h"

namespace dv::gguf {

const tok::ChatTemplate& ModelTokenizer::Chat() const {
  if (!chat) throw tok::TokenizerError(chat_problem);  // names the file already
  return *chat;
}

std::string TokenizerPathFor(const std::string& model_dir) {
  if (!model_dir.empty()) {
    for (const char* name : {kArtifactTokenizerFile, "tokenizer.json"}) {
      const std::string p = model_dir + "/" + name;
      // Whatever lies there is read (and refused with its name if it is not a file).
      std::error_code ec;
      if (std::filesystem::exists(std::filesystem::symlink_status(p, ec))) return p;
    }
  }
  return tok::DefaultTokenizerPath();
}

ModelTokenizer LoadModelTokenizer(const std::string& path) {
  if (!IsGgufFile(path)) {
    return {tok::Tokenizer::FromFile(path), path, false, tok::ChatTemplate::Qwen3(), ""};
  }
  const GgufFile file = GgufFile::Open(path);
  GgufTokenizer t = LoadGgufTokenizer(file);
  ModelTokenizer out{std::move(t.tokenizer), path, true, std::nullopt, ""};
  try {
    out.chat = RequireChatTemplate(t, file);
  } catch (const std::exception& e) {
    out.chat_problem = e.what();
  }
  return out;
}

}  // namespace dv::gguf
