#include "gguf/gguf_writer.h"

#include <bit>
#include <cstdint>
#include <vector>

#include "base/check.h"
#include "base/file_io.h"

namespace dv::gguf {
namespace {

void Le(std::vector<uint8_t>& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void Str(std::vector<uint8_t>& out, std::string_view s) {
  Le(out, s.size(), 8);
  out.insert(out.end(), s.begin(), s.end());
}

uint64_t AlignUp(uint64_t n) { return (n + kGgufAlignment - 1) / kGgufAlignment * kGgufAlignment; }

bool KeptForTokenizer(std::string_view key) {
  return key == "general.architecture" || key == "general.name" || key.starts_with("tokenizer.");
}

}  // namespace

void GgufHeaderWriter::Key(std::string_view key, ValueType type) {
  Str(metadata_, key);
  Le(metadata_, static_cast<uint32_t>(type), 4);
  ++metadata_count_;
}

void GgufHeaderWriter::String(std::string_view key, std::string_view value) {
  Key(key, ValueType::kString);
  Str(metadata_, value);
}

void GgufHeaderWriter::Uint32(std::string_view key, uint32_t value) {
  Key(key, ValueType::kUint32);
  Le(metadata_, value, 4);
}

void GgufHeaderWriter::Float32(std::string_view key, float value) {
  Key(key, ValueType::kFloat32);
  Le(metadata_, std::bit_cast<uint32_t>(value), 4);
}

void GgufHeaderWriter::Copy(const MetadataEntry& e) {
  const Value& v = e.value;
  DV_CHECK(v.element_type() != ValueType::kArray) << "GGUF writer: nested array " << e.key;
  Key(e.key, v.type());
  if (v.is_array()) {
    Le(metadata_, static_cast<uint32_t>(v.element_type()), 4);
    Le(metadata_, v.size(), 8);
  }
  if (v.element_type() == ValueType::kString) {
    for (std::string_view s : v.Strings()) Str(metadata_, s);
  } else {
    metadata_.insert(metadata_.end(), v.raw().begin(), v.raw().end());
  }
}

uint64_t GgufHeaderWriter::Tensor(std::string_view name, const std::vector<int64_t>& dims,
                                  GgmlType type, uint64_t bytes) {
  Str(tensors_, name);
  Le(tensors_, dims.size(), 4);
  for (int64_t d : dims) Le(tensors_, static_cast<uint64_t>(d), 8);
  Le(tensors_, static_cast<uint32_t>(type), 4);
  const uint64_t offset = data_size_;
  Le(tensors_, offset, 8);
  ++tensor_count_;
  data_size_ = AlignUp(offset + bytes);
  return offset;
}

std::vector<uint8_t> GgufHeaderWriter::Bytes() const {
  std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
  Le(out, 3, 4);  // version
  Le(out, tensor_count_, 8);
  Le(out, metadata_count_, 8);
  out.insert(out.end(), metadata_.begin(), metadata_.end());
  out.insert(out.end(), tensors_.begin(), tensors_.end());
  out.resize(AlignUp(out.size()), 0);
  return out;
}

void WriteTokenizerGguf(const GgufFile& src, const std::string& path) {
  GgufHeaderWriter header;
  for (const MetadataEntry& e : src.metadata()) {
    // (Nested arrays, which no tokenizer key uses, are left out.)
    if (KeptForTokenizer(e.key) && e.value.element_type() != ValueType::kArray) header.Copy(e);
  }
  WriteFileAtomic(path, header.Bytes());
}

}  // namespace dv::gguf
