#include "gguf/gguf_writer.h"

#include <cstdint>
#include <vector>

#include "base/file_io.h"

namespace dv::gguf {
namespace {

class Out {
 public:
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  void Str(std::string_view s) {
    U64(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void Raw(std::span<const uint8_t> b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  void PadTo(size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> bytes_;
};

bool Kept(std::string_view key) {
  return key == "general.architecture" || key == "general.name" || key.starts_with("tokenizer.");
}

}  // namespace

void WriteTokenizerGguf(const GgufFile& src, const std::string& path) {
  std::vector<const MetadataEntry*> kept;
  for (const MetadataEntry& e : src.metadata()) {
    // (Nested arrays, which no tokenizer key uses, are left out.)
    if (Kept(e.key) && e.value.element_type() != ValueType::kArray) kept.push_back(&e);
  }
  Out out;
  out.Raw(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("GGUF"), 4));
  out.U32(3);  // version
  out.U64(0);  // tensors
  out.U64(kept.size());
  for (const MetadataEntry* e : kept) {
    const Value& v = e->value;
    out.Str(e->key);
    out.U32(static_cast<uint32_t>(v.type()));
    if (v.is_array()) {
      out.U32(static_cast<uint32_t>(v.element_type()));
      out.U64(v.size());
    }
    if (v.element_type() == ValueType::kString) {
      for (std::string_view s : v.Strings()) out.Str(s);
    } else {
      out.Raw(v.raw());
    }
  }
  // The (empty) data section starts at the next multiple of the default alignment.
  out.PadTo(32);
  WriteFileAtomic(path, out.bytes());
}

}  // namespace dv::gguf
