// Writing GGUF v3 files (ggml's docs/gguf.md, little-endian, the default 32-byte alignment):
// GgufHeaderWriter builds the part before the data section (metadata, tensor infos), and two
// writers use it: the metadata of a GGUF kept in a GGUF of its own (what an int artifact
// prepared from a GGUF model keeps of it: its tokenizer and chat template, `tokenizer.gguf` in
// the artifact folder), and the synthetic Llama models of gguf/gguf_synth.h. Both are read back
// with GgufFile like any other GGUF.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/ggml_type.h"
#include "gguf/gguf_file.h"

namespace dv::gguf {

// The name of that file in an artifact folder.
inline constexpr const char* kArtifactTokenizerFile = "tokenizer.gguf";

// The alignment of every tensor's data (general.alignment is never written).
inline constexpr uint64_t kGgufAlignment = 32;

// Metadata entries and tensor infos, in the order they are added; Bytes() is the file's first
// part, padded to the alignment: the data section (each tensor at its offset, padded between
// tensors) follows it.
class GgufHeaderWriter {
 public:
  void String(std::string_view key, std::string_view value);
  void Uint32(std::string_view key, uint32_t value);
  void Float32(std::string_view key, float value);
  // An entry of another file, value byte for byte (arrays of arrays are not supported).
  void Copy(const MetadataEntry& entry);

  // A tensor of `type` with ggml's dims (ne[0] first: [cols, rows] for a row-major matrix) whose
  // data is `bytes` long; returns its offset in the data section.
  uint64_t Tensor(std::string_view name, const std::vector<int64_t>& dims, GgmlType type,
                  uint64_t bytes);

  // Where the data section's next tensor would start: its size so far, padding included.
  uint64_t data_size() const { return data_size_; }
  std::vector<uint8_t> Bytes() const;

 private:
  void Key(std::string_view key, ValueType type);
  std::vector<uint8_t> metadata_, tensors_;
  uint64_t metadata_count_ = 0, tensor_count_ = 0, data_size_ = 0;
};

// Writes a GGUF v3 file holding no tensors and the metadata entries of `src` whose key is
// general.architecture, general.name or starts with `tokenizer.`, in src's order, values byte
// for byte. Atomic (a temporary file renamed into place); throws FileError naming the path.
void WriteTokenizerGguf(const GgufFile& src, const std::string& path);

}  // namespace dv::gguf
