// Writes GGUF bytes field by field for the tests: valid files with chosen metadata and tensors,
// and, through ByteWriter, files broken in exactly one place. Independent of the reader under test
// (it follows ggml's docs/gguf.md, little-endian).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace dv::gguf::testing {

class ByteWriter {
 public:
  ByteWriter& U8(uint8_t v) {
    bytes_.push_back(v);
    return *this;
  }
  ByteWriter& U32(uint32_t v) { return Le(v, 4); }
  ByteWriter& U64(uint64_t v) { return Le(v, 8); }
  ByteWriter& F32(float v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    return U32(bits);
  }
  ByteWriter& Str(std::string_view s) {
    U64(s.size());
    return Raw(s);
  }
  ByteWriter& Raw(std::string_view s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  ByteWriter& Raw(const std::vector<uint8_t>& b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  ByteWriter& PadTo(size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
    return *this;
  }
  // GGUF header: magic, version, tensor count, metadata count.
  ByteWriter& Header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    return Raw("GGUF").U32(version).U64(tensors).U64(kvs);
  }
  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  ByteWriter& Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

// Value type and ggml type ids as the file spells them.
enum : uint32_t { kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kStr, kArr, kU64, kI64, kF64 };
enum : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ8_0 = 8 };

// A whole valid file: metadata entries (already encoded after their key) and tensors whose data is
// laid out in order at the alignment.
class GgufBuilder {
 public:
  GgufBuilder& Kv(std::string_view key, uint32_t type, const ByteWriter& value) {
    ByteWriter w;
    w.Str(key).U32(type).Raw(value.bytes());
    kvs_.push_back(w.bytes());
    return *this;
  }
  GgufBuilder& U32(std::string_view key, uint32_t v) { return Kv(key, kU32, ByteWriter().U32(v)); }
  GgufBuilder& I32(std::string_view key, int32_t v) {
    return Kv(key, kI32, ByteWriter().U32(static_cast<uint32_t>(v)));
  }
  GgufBuilder& F32(std::string_view key, float v) { return Kv(key, kF32, ByteWriter().F32(v)); }
  GgufBuilder& String(std::string_view key, std::string_view v) {
    return Kv(key, kStr, ByteWriter().Str(v));
  }
  GgufBuilder& Bool(std::string_view key, bool v) {
    return Kv(key, kBool, ByteWriter().U8(v ? 1 : 0));
  }
  GgufBuilder& Strings(std::string_view key, const std::vector<std::string>& v) {
    ByteWriter w;
    w.U32(kStr).U64(v.size());
    for (const std::string& s : v) w.Str(s);
    return Kv(key, kArr, w);
  }
  GgufBuilder& I32s(std::string_view key, const std::vector<int32_t>& v) {
    ByteWriter w;
    w.U32(kI32).U64(v.size());
    for (int32_t x : v) w.U32(static_cast<uint32_t>(x));
    return Kv(key, kArr, w);
  }
  // A tensor with its data (bytes as the file stores them); dims in ggml order (row length first).
  GgufBuilder& Tensor(std::string_view name, uint32_t type, std::vector<uint64_t> dims,
                      std::vector<uint8_t> data) {
    tensors_.push_back({std::string(name), type, std::move(dims), std::move(data)});
    return *this;
  }
  // An F32 tensor of the given ggml dims filled with `fill`, `step`, ...
  GgufBuilder& F32Tensor(std::string_view name, std::vector<uint64_t> dims, float fill = 0.5f,
                         float step = 0.25f) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    ByteWriter data;
    for (uint64_t i = 0; i < n; ++i) data.F32(fill + step * static_cast<float>(i));
    return Tensor(name, kGgmlF32, std::move(dims), data.bytes());
  }
  GgufBuilder& Alignment(uint32_t a) {
    alignment_ = a;
    return U32("general.alignment", a);
  }
  GgufBuilder& Version(uint32_t v) {
    version_ = v;
    return *this;
  }

  std::vector<uint8_t> Build() const {
    ByteWriter w;
    w.Header(tensors_.size(), kvs_.size(), version_);
    for (const auto& kv : kvs_) w.Raw(kv);
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
      w.Str(t.name).U32(static_cast<uint32_t>(t.dims.size()));
      for (uint64_t d : t.dims) w.U64(d);
      w.U32(t.type).U64(offset);
      offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
    }
    w.PadTo(alignment_);
    for (const auto& t : tensors_) w.Raw(t.data).PadTo(alignment_);
    return w.bytes();
  }

 private:
  struct TensorSpec {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> data;
  };
  std::vector<std::vector<uint8_t>> kvs_;
  std::vector<TensorSpec> tensors_;
  uint32_t alignment_ = 32;
  uint32_t version_ = 3;
};

}  // namespace dv::gguf::testing
