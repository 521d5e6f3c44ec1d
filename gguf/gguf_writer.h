// Writing the metadata of a GGUF into a GGUF of its own: what an int artifact prepared from a
// GGUF model keeps of it (its tokenizer and chat template, `tokenizer.gguf` in the artifact
// folder), read back with GgufFile and LoadGgufTokenizer like the model file itself.
#pragma once

#include <string>
#include <string_view>

#include "gguf/gguf_file.h"

namespace dv::gguf {

// The name of that file in an artifact folder.
inline constexpr const char* kArtifactTokenizerFile = "tokenizer.gguf";

// Writes a GGUF v3 file holding no tensors and the metadata entries of `src` whose key is
// general.architecture, general.name or starts with `tokenizer.`, in src's order, values byte
// for byte. Atomic (a temporary file renamed into place); throws FileError naming the path.
void WriteTokenizerGguf(const GgufFile& src, const std::string& path);

}  // namespace dv::gguf
