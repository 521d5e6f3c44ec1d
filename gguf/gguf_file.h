#pragma once
// The GGUF container (ggml's docs/gguf.md), versions 2 and 3, little-endian: header, metadata
// key/values, tensor infos, alignment and the data section, read from a memory-mapped file.
//
// Opening validates the whole layout before anything is used: every count, string length, array
// length and tensor extent is checked against the bytes that remain before it is believed, so a
// hostile file costs at most O(file size) memory and is reported as one GgufError line naming the
// file. Nothing is copied: strings and tensor bytes are views into the mapping, which the GgufFile
// owns (views stay valid while it lives; moving it keeps them valid).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected_error.h"
#include "gguf/ggml_type.h"

namespace dv::gguf {

// An expected failure: a missing, unreadable, malformed or unsupported GGUF file. what() is one
// line, "<path>: <problem>".
class GgufError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

// GGUF's metadata value types, numbered as in the file.
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// "UINT32", "ARRAY"...
const char* ValueTypeName(ValueType type);

// One metadata value: a scalar, a string, or an array of scalars or strings (arrays of arrays are
// rejected at load, as ggml rejects them). Element accessors take an index (0 for a scalar) and
// abort on an index out of range or a type that does not fit (callers check type() first;
// GgufFile's typed getters do that and report a GgufError).
class Value {
 public:
  ValueType type() const { return type_; }
  bool is_array() const { return type_ == ValueType::kArray; }
  // The type of the elements: element_type() == type() for a scalar.
  ValueType element_type() const { return element_type_; }
  // Number of elements: 1 for a scalar.
  uint64_t size() const { return count_; }

  bool IsInteger() const;  // element type is one of the eight integer types
  bool IsFloat() const;    // FLOAT32 or FLOAT64

  // Integer elements, widened. UINT64 values above INT64_MAX read as nullopt from AsInt.
  std::optional<int64_t> AsInt(uint64_t i = 0) const;
  uint64_t AsUint64(uint64_t i = 0) const;  // UINT64 only (or any unsigned type), widened
  double AsFloat(uint64_t i = 0) const;     // FLOAT32 (exactly widened) or FLOAT64
  bool AsBool(uint64_t i = 0) const;        // BOOL: any non-zero byte is true
  std::string_view AsString(uint64_t i = 0) const;
  // All elements of a STRING value or STRING array, in order.
  const std::vector<std::string_view>& Strings() const { return strings_; }
  // The fixed-size elements as stored (little-endian, back to back); empty for STRING values.
  std::span<const uint8_t> raw() const { return raw_; }

 private:
  friend class Parser;
  const uint8_t* Element(uint64_t i, size_t size) const;

  ValueType type_ = ValueType::kUint8;
  ValueType element_type_ = ValueType::kUint8;
  uint64_t count_ = 1;
  std::span<const uint8_t> raw_;           // fixed-size elements, little-endian, back to back
  std::vector<std::string_view> strings_;  // STRING elements
};

struct MetadataEntry {
  std::string_view key;
  Value value;
};

struct TensorInfo {
  std::string_view name;
  GgmlType type = GgmlType::kF32;
  // ggml order: dims[0] is the fastest-varying (a row's length). The row-major (numpy, PyTorch)
  // shape is the reverse; see Shape().
  std::vector<int64_t> dims;
  uint64_t offset = 0;  // from the start of the data section, a multiple of the alignment
  uint64_t nbytes = 0;
  std::span<const uint8_t> bytes;  // into the mapping

  int64_t NumElements() const;
  // Row-major shape: dims reversed ([rows, cols] for a matrix, as Hugging Face stores it).
  std::vector<int64_t> Shape() const;
};

class GgufFile {
 public:
  // Maps and validates `path`. Throws GgufError naming the file if it is missing, not a regular
  // file (a FIFO or device is refused without blocking), truncated, malformed, big-endian, of
  // version 1 or of an unknown version, or inconsistent: duplicate keys or tensor names, a bad
  // general.alignment (not a UINT32 power of two), tensor dims that are negative, overflow or do
  // not make whole blocks, an unknown ggml type, offsets that are unaligned, past the end, or
  // overlapping.
  static GgufFile Open(const std::string& path);
  // Same over bytes the caller keeps alive; `name` labels errors.
  static GgufFile FromBytes(std::span<const uint8_t> bytes, const std::string& name);
  // A temporary buffer would be gone before the views into it are used.
  static GgufFile FromBytes(std::vector<uint8_t>&& bytes, const std::string& name) = delete;

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }      // general.alignment, default 32
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  uint64_t file_size() const { return bytes_.size(); }

  // Metadata in file order.
  const std::vector<MetadataEntry>& metadata() const { return metadata_; }
  const Value* Find(std::string_view key) const;  // nullptr if absent

  // Typed getters: throw GgufError ("<path>: metadata <key> is missing" or "... is a STRING, not an
  // integer") when absent or of another type. The *Or forms return `fallback` when absent (still
  // throwing for a wrong type).
  int64_t GetInt(std::string_view key) const;  // any integer type, value within int64
  int64_t GetIntOr(std::string_view key, int64_t fallback) const;
  double GetFloat(std::string_view key) const;  // FLOAT32 or FLOAT64
  double GetFloatOr(std::string_view key, double fallback) const;
  bool GetBoolOr(std::string_view key, bool fallback) const;
  std::string_view GetString(std::string_view key) const;
  std::string_view GetStringOr(std::string_view key, std::string_view fallback) const;
  // A STRING array; throws for any other type.
  const std::vector<std::string_view>& GetStringArray(std::string_view key) const;
  // An integer array, widened; throws for any other type or a value outside int64.
  std::vector<int64_t> GetIntArray(std::string_view key) const;

  // Tensor infos in file order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(std::string_view name) const;  // nullptr if absent

  // The tensor's elements as float32, in the file's (ggml) element order; dequantize.h says how.
  // Throws GgufError naming the file, tensor and type for a type it cannot convert.
  std::vector<float> Dequantize(const TensorInfo& tensor) const;
  // Same into `out`, which must hold exactly NumElements() floats (GgufError otherwise).
  void DequantizeInto(const TensorInfo& tensor, std::span<float> out) const;

  // "<path>: <problem>" as a GgufError.
  [[noreturn]] void Fail(const std::string& problem) const;

 private:
  friend class Parser;
  GgufFile();

  struct Mapping;
  std::unique_ptr<Mapping> mapping_;  // owns the bytes when opened from a path
  std::string path_;
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<MetadataEntry> metadata_;
  std::map<std::string_view, size_t, std::less<>> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string_view, size_t, std::less<>> tensor_index_;
};

// A value for people: "3", "1e+05", "\"llama\"", "[STRING x 49152] \"<|endoftext|>\", ...".
// Arrays show at most `max_items` elements; strings are cut at 80 bytes.
std::string DescribeValue(const Value& value, size_t max_items = 6);

}  // namespace dv::gguf
