#include "gguf/gguf_file.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "engine/safetensors.h"
#include "gguf/dequantize.h"

namespace dv::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS

// Smallest encodings, used to bound counts by the bytes left before anything is allocated.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // empty key, type, a one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims 0, type, offset

[[noreturn]] void Abort(const char* what, uint64_t i, uint64_t n) {
  std::fprintf(stderr, "%s:%d: gguf::Value: %s (index %" PRIu64 ", size %" PRIu64 ")\n", __FILE__,
               __LINE__, what, i, n);
  std::abort();
}

uint64_t ReadLe(const uint8_t* p, size_t size) {
  uint64_t v = 0;
  for (size_t b = size; b-- > 0;) v = (v << 8) | p[b];
  return v;
}

// Bytes of one element of a fixed-size type; 0 for STRING and ARRAY.
size_t FixedSize(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
      return 8;
    case ValueType::kString:
    case ValueType::kArray:
      return 0;
  }
  return 0;
}

bool IsKnownValueType(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::kFloat64); }

bool IsSigned(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 ||
         t == ValueType::kInt64;
}

std::string Quoted(std::string_view s, size_t max_bytes = 80) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max_bytes) out += "...";
  return out + "\"";
}

}  // namespace

const char* ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
      return "UINT8";
    case ValueType::kInt8:
      return "INT8";
    case ValueType::kUint16:
      return "UINT16";
    case ValueType::kInt16:
      return "INT16";
    case ValueType::kUint32:
      return "UINT32";
    case ValueType::kInt32:
      return "INT32";
    case ValueType::kFloat32:
      return "FLOAT32";
    case ValueType::kBool:
      return "BOOL";
    case ValueType::kString:
      return "STRING";
    case ValueType::kArray:
      return "ARRAY";
    case ValueType::kUint64:
      return "UINT64";
    case ValueType::kInt64:
      return "INT64";
    case ValueType::kFloat64:
      return "FLOAT64";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Value

bool Value::IsInteger() const {
  const ValueType t = element_type_;
  return t == ValueType::kUint8 || t == ValueType::kInt8 || t == ValueType::kUint16 ||
         t == ValueType::kInt16 || t == ValueType::kUint32 || t == ValueType::kInt32 ||
         t == ValueType::kUint64 || t == ValueType::kInt64;
}

bool Value::IsFloat() const {
  return element_type_ == ValueType::kFloat32 || element_type_ == ValueType::kFloat64;
}

const uint8_t* Value::Element(uint64_t i, size_t size) const {
  if (i >= count_) Abort("element index out of range", i, count_);
  if (FixedSize(element_type_) != size || size == 0) Abort("element type mismatch", i, count_);
  return raw_.data() + i * size;
}

std::optional<int64_t> Value::AsInt(uint64_t i) const {
  if (!IsInteger()) Abort("not an integer value", i, count_);
  const size_t size = FixedSize(element_type_);
  const uint64_t bits = ReadLe(Element(i, size), size);
  if (IsSigned(element_type_)) {
    const unsigned shift = static_cast<unsigned>(64 - 8 * size);
    // Sign-extend through the unsigned representation.
    const uint64_t sign = uint64_t{1} << (8 * size - 1);
    return shift == 0 ? static_cast<int64_t>(bits) : static_cast<int64_t>((bits ^ sign) - sign);
  }
  if (bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(bits);
}

uint64_t Value::AsUint64(uint64_t i) const {
  if (!IsInteger() || IsSigned(element_type_)) Abort("not an unsigned value", i, count_);
  const size_t size = FixedSize(element_type_);
  return ReadLe(Element(i, size), size);
}

double Value::AsFloat(uint64_t i) const {
  if (element_type_ == ValueType::kFloat32) {
    return std::bit_cast<float>(static_cast<uint32_t>(ReadLe(Element(i, 4), 4)));
  }
  if (element_type_ == ValueType::kFloat64) return std::bit_cast<double>(ReadLe(Element(i, 8), 8));
  Abort("not a float value", i, count_);
}

bool Value::AsBool(uint64_t i) const {
  if (element_type_ != ValueType::kBool) Abort("not a bool value", i, count_);
  return *Element(i, 1) != 0;
}

std::string_view Value::AsString(uint64_t i) const {
  if (element_type_ != ValueType::kString) Abort("not a string value", i, count_);
  if (i >= strings_.size()) Abort("element index out of range", i, count_);
  return strings_[i];
}

// ---------------------------------------------------------------------------------------------
// TensorInfo

int64_t TensorInfo::NumElements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;  // validated at load not to overflow
  return n;
}

std::vector<int64_t> TensorInfo::Shape() const { return {dims.rbegin(), dims.rend()}; }

// ---------------------------------------------------------------------------------------------
// Parsing

struct GgufFile::Mapping {
  MappedFile file;
};

class Parser {
 public:
  Parser(GgufFile& out) : f_(out), bytes_(out.bytes_) {}

  void Run() {
    if (bytes_.size() < 4) Fail("truncated: shorter than the 4-byte magic");
    const uint32_t magic = U32("magic");
    if (magic != kMagic) {
      Fail("not a GGUF file (magic " + Hex(magic) + ", expected \"GGUF\")");
    }
    const uint32_t version = U32("version");
    if (version == 1) Fail("GGUF version 1 is not supported (only versions 2 and 3)");
    if (version != 2 && version != 3) {
      if (version == 0x02000000u || version == 0x03000000u) {  // 2 or 3, byte-swapped
        Fail("big-endian GGUF files are not supported");
      }
      Fail("unknown GGUF version " + std::to_string(version) + " (only versions 2 and 3)");
    }
    f_.version_ = version;
    const uint64_t tensor_count = U64("tensor count");
    const uint64_t kv_count = U64("metadata count");
    if (kv_count > Remaining() / kMinKvBytes) {
      Fail("metadata count " + std::to_string(kv_count) + " cannot fit in the " +
           std::to_string(Remaining()) + " bytes left");
    }
    ReadMetadata(kv_count);
    ReadAlignment();
    if (tensor_count > Remaining() / kMinTensorInfoBytes) {
      Fail("tensor count " + std::to_string(tensor_count) + " cannot fit in the " +
           std::to_string(Remaining()) + " bytes left");
    }
    ReadTensorInfos(tensor_count);
    PlaceTensors();
  }

 private:
  [[noreturn]] void Fail(const std::string& problem) const { f_.Fail(problem); }

  static std::string Hex(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
  }

  uint64_t Remaining() const { return bytes_.size() - pos_; }

  void Need(uint64_t n, const std::string& what) const {
    if (n > Remaining()) {
      Fail("truncated: " + what + " at offset " + std::to_string(pos_) + " needs " +
           std::to_string(n) + " bytes, " + std::to_string(Remaining()) + " left");
    }
  }

  std::span<const uint8_t> Take(uint64_t n, const std::string& what) {
    Need(n, what);
    const auto out = bytes_.subspan(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return out;
  }

  uint32_t U32(const std::string& what) {
    return static_cast<uint32_t>(ReadLe(Take(4, what).data(), 4));
  }
  uint64_t U64(const std::string& what) { return ReadLe(Take(8, what).data(), 8); }

  std::string_view String(const std::string& what) {
    const uint64_t len = U64(what + " length");
    if (len > Remaining()) {
      Fail("truncated: " + what + " of " + std::to_string(len) + " bytes at offset " +
           std::to_string(pos_) + " runs past the end (" + std::to_string(Remaining()) +
           " bytes left)");
    }
    const auto s = Take(len, what);
    return {reinterpret_cast<const char*>(s.data()), s.size()};
  }

  ValueType Type(const std::string& what) {
    const uint32_t t = U32(what + " type");
    if (!IsKnownValueType(t)) Fail(what + " has unknown value type " + std::to_string(t));
    return static_cast<ValueType>(t);
  }

  // The value of `key` after its type tag.
  Value ReadValue(ValueType type, const std::string& where) {
    Value v;
    v.type_ = type;
    v.element_type_ = type;
    if (type == ValueType::kString) {
      v.strings_.push_back(String(where));
      return v;
    }
    if (type != ValueType::kArray) {
      v.raw_ = Take(FixedSize(type), where);
      return v;
    }
    v.element_type_ = Type(where + " element");
    if (v.element_type_ == ValueType::kArray) {
      Fail(where + " is an array of arrays, which GGUF readers do not support");
    }
    v.count_ = U64(where + " array length");
    const size_t size = FixedSize(v.element_type_);
    // Every element takes at least `size` bytes (8 for a string's length): bound the count first.
    const uint64_t min_bytes = size != 0 ? size : 8;
    if (v.count_ > Remaining() / min_bytes) {
      Fail(where + " array of " + std::to_string(v.count_) + " " + ValueTypeName(v.element_type_) +
           " elements runs past the end of the file");
    }
    if (size != 0) {
      v.raw_ = Take(v.count_ * size, where);
    } else {
      v.strings_.reserve(static_cast<size_t>(v.count_));
      for (uint64_t i = 0; i < v.count_; ++i) {
        v.strings_.push_back(String(where + "[" + std::to_string(i) + "]"));
      }
    }
    return v;
  }

  void ReadMetadata(uint64_t count) {
    f_.metadata_.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) {
      const std::string_view key = String("metadata key " + std::to_string(i));
      const std::string where = "metadata " + std::string(key);
      const ValueType type = Type(where);
      Value value = ReadValue(type, where);
      if (!f_.metadata_index_.emplace(key, f_.metadata_.size()).second) {
        Fail("metadata key " + Quoted(key) + " appears twice");
      }
      f_.metadata_.push_back({key, std::move(value)});
    }
  }

  void ReadAlignment() {
    const Value* a = f_.Find("general.alignment");
    if (a == nullptr) return;
    if (a->type() != ValueType::kUint32) {
      Fail(std::string("general.alignment is a ") + ValueTypeName(a->type()) + ", not a UINT32");
    }
    const auto alignment = static_cast<uint32_t>(a->AsUint64());
    if (alignment == 0 || !std::has_single_bit(alignment)) {
      Fail("general.alignment " + std::to_string(alignment) + " is not a power of two");
    }
    f_.alignment_ = alignment;
  }

  void ReadTensorInfos(uint64_t count) {
    f_.tensors_.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) {
      TensorInfo t;
      t.name = String("tensor name " + std::to_string(i));
      const std::string where = "tensor " + Quoted(t.name);
      if (t.name.empty()) Fail("tensor " + std::to_string(i) + " has an empty name");
      const uint32_t n_dims = U32(where + " dimension count");
      if (n_dims > kMaxDims) {
        Fail(where + " has " + std::to_string(n_dims) + " dimensions (at most 4)");
      }
      uint64_t elements = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        const uint64_t dim = U64(where + " dimension");
        if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          Fail(where + " has a negative dimension");
        }
        if (dim != 0 &&
            elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim) {
          Fail(where + " has 2^63 elements or more");
        }
        elements *= dim;
        t.dims.push_back(static_cast<int64_t>(dim));
      }
      const uint32_t type_id = U32(where + " type");
      const auto info = FindGgmlType(type_id);
      if (!info) Fail(where + " has unknown ggml type " + std::to_string(type_id));
      t.type = info->type;
      const int64_t row = t.dims.empty() ? 1 : t.dims[0];
      if (row % info->block_size != 0) {
        Fail(where + " (" + info->name + ") has rows of " + std::to_string(row) +
             " elements, not a multiple of the block size " + std::to_string(info->block_size));
      }
      const uint64_t blocks = elements / static_cast<uint64_t>(info->block_size);
      const auto type_size = static_cast<uint64_t>(info->type_size);
      if (blocks > std::numeric_limits<uint64_t>::max() / type_size) {
        Fail(where + " needs 2^64 bytes or more");
      }
      t.nbytes = blocks * type_size;
      t.offset = U64(where + " offset");
      if (t.offset % f_.alignment_ != 0) {
        Fail(where + " offset " + std::to_string(t.offset) +
             " is not a multiple of the alignment " + std::to_string(f_.alignment_));
      }
      if (!f_.tensor_index_.emplace(t.name, f_.tensors_.size()).second) {
        Fail("tensor name " + Quoted(t.name) + " appears twice");
      }
      f_.tensors_.push_back(std::move(t));
    }
  }

  void PlaceTensors() {
    const uint64_t alignment = f_.alignment_;
    const uint64_t data_offset = (pos_ + alignment - 1) / alignment * alignment;
    f_.data_offset_ = data_offset;
    const uint64_t data_size = data_offset <= bytes_.size() ? bytes_.size() - data_offset : 0;
    std::vector<std::pair<uint64_t, size_t>> order;  // (offset, index), to find overlaps
    order.reserve(f_.tensors_.size());
    for (size_t i = 0; i < f_.tensors_.size(); ++i) {
      TensorInfo& t = f_.tensors_[i];
      if (t.offset > data_size || t.nbytes > data_size - t.offset) {
        Fail("tensor " + Quoted(t.name) + " (" + std::to_string(t.nbytes) +
             " bytes at data offset " + std::to_string(t.offset) +
             ") runs past the end of the file (data section of " + std::to_string(data_size) +
             " bytes)");
      }
      t.bytes = bytes_.subspan(static_cast<size_t>(data_offset + t.offset),
                               static_cast<size_t>(t.nbytes));
      if (t.nbytes > 0) order.emplace_back(t.offset, i);
    }
    std::sort(order.begin(), order.end());
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& prev = f_.tensors_[order[k - 1].second];
      const TensorInfo& next = f_.tensors_[order[k].second];
      if (next.offset < prev.offset + prev.nbytes) {
        Fail("tensors " + Quoted(prev.name) + " and " + Quoted(next.name) + " overlap");
      }
    }
  }

  GgufFile& f_;
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// GgufFile

GgufFile::GgufFile() = default;
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::Open(const std::string& path) {
  auto mapping = std::make_unique<Mapping>();
  try {
    mapping->file = MappedFile::Open(path);
  } catch (const ArtifactError& e) {
    throw GgufError(e.what());
  }
  const std::span<const uint8_t> bytes = mapping->file.bytes();
  GgufFile f = FromBytes(bytes, path);
  f.mapping_ = std::move(mapping);
  return f;
}

GgufFile GgufFile::FromBytes(std::span<const uint8_t> bytes, const std::string& name) {
  GgufFile f;
  f.path_ = name;
  f.bytes_ = bytes;
  Parser(f).Run();
  return f;
}

void GgufFile::Fail(const std::string& problem) const { throw GgufError(path_ + ": " + problem); }

const Value* GgufFile::Find(std::string_view key) const {
  const auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

namespace {

std::string WrongType(std::string_view key, const Value& v, const char* wanted) {
  std::string type = ValueTypeName(v.type());
  if (v.is_array()) type += " of " + std::string(ValueTypeName(v.element_type()));
  return "metadata " + std::string(key) + " is " + (v.is_array() ? "an " : "a ") + type + ", not " +
         wanted;
}

}  // namespace

int64_t GgufFile::GetInt(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) Fail("metadata " + std::string(key) + " is missing");
  if (v->is_array() || !v->IsInteger()) Fail(WrongType(key, *v, "an integer"));
  const auto value = v->AsInt();
  if (!value) Fail("metadata " + std::string(key) + " is larger than 2^63 - 1");
  return *value;
}

int64_t GgufFile::GetIntOr(std::string_view key, int64_t fallback) const {
  return Find(key) == nullptr ? fallback : GetInt(key);
}

double GgufFile::GetFloat(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) Fail("metadata " + std::string(key) + " is missing");
  if (v->is_array() || !v->IsFloat()) Fail(WrongType(key, *v, "a FLOAT32 or FLOAT64"));
  return v->AsFloat();
}

double GgufFile::GetFloatOr(std::string_view key, double fallback) const {
  return Find(key) == nullptr ? fallback : GetFloat(key);
}

bool GgufFile::GetBoolOr(std::string_view key, bool fallback) const {
  const Value* v = Find(key);
  if (v == nullptr) return fallback;
  if (v->type() != ValueType::kBool) Fail(WrongType(key, *v, "a BOOL"));
  return v->AsBool();
}

std::string_view GgufFile::GetString(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) Fail("metadata " + std::string(key) + " is missing");
  if (v->type() != ValueType::kString) Fail(WrongType(key, *v, "a STRING"));
  return v->AsString();
}

std::string_view GgufFile::GetStringOr(std::string_view key, std::string_view fallback) const {
  return Find(key) == nullptr ? fallback : GetString(key);
}

const std::vector<std::string_view>& GgufFile::GetStringArray(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) Fail("metadata " + std::string(key) + " is missing");
  if (!v->is_array() || v->element_type() != ValueType::kString) {
    Fail(WrongType(key, *v, "an ARRAY of STRING"));
  }
  return v->Strings();
}

std::vector<int64_t> GgufFile::GetIntArray(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) Fail("metadata " + std::string(key) + " is missing");
  if (!v->is_array() || !v->IsInteger()) Fail(WrongType(key, *v, "an ARRAY of integers"));
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(v->size()));
  for (uint64_t i = 0; i < v->size(); ++i) {
    const auto x = v->AsInt(i);
    if (!x)
      Fail("metadata " + std::string(key) + "[" + std::to_string(i) + "] is larger than 2^63 - 1");
    out.push_back(*x);
  }
  return out;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::vector<float> GgufFile::Dequantize(const TensorInfo& tensor) const {
  if (!CanDequantize(tensor.type)) {
    Fail("tensor " + std::string(tensor.name) + " has type " + GgmlTypeName(tensor.type) +
         ", which cannot be dequantized (supported: " + DequantizableTypeNames() + ")");
  }
  std::vector<float> out(static_cast<size_t>(tensor.NumElements()));
  DequantizeInto(tensor, out);
  return out;
}

void GgufFile::DequantizeInto(const TensorInfo& tensor, std::span<float> out) const {
  if (!CanDequantize(tensor.type)) {
    Fail("tensor " + std::string(tensor.name) + " has type " + GgmlTypeName(tensor.type) +
         ", which cannot be dequantized (supported: " + DequantizableTypeNames() + ")");
  }
  if (out.size() != static_cast<uint64_t>(tensor.NumElements())) {
    Fail("tensor " + std::string(tensor.name) + " has " + std::to_string(tensor.NumElements()) +
         " elements, the output holds " + std::to_string(out.size()));
  }
  DequantizeRow(tensor.type, tensor.bytes, out);
}

std::string DescribeValue(const Value& value, size_t max_items) {
  const auto element = [&](uint64_t i) -> std::string {
    switch (value.element_type()) {
      case ValueType::kString:
        return Quoted(value.AsString(i));
      case ValueType::kBool:
        return value.AsBool(i) ? "true" : "false";
      case ValueType::kFloat32:
      case ValueType::kFloat64: {
        std::ostringstream out;
        out.precision(value.element_type() == ValueType::kFloat32 ? 9 : 17);
        out << value.AsFloat(i);
        return out.str();
      }
      default: {
        const auto v = value.AsInt(i);
        return v ? std::to_string(*v) : std::to_string(value.AsUint64(i));
      }
    }
  };
  if (!value.is_array()) return element(0);
  std::string out = "[" + std::string(ValueTypeName(value.element_type())) + " x " +
                    std::to_string(value.size()) + "]";
  for (uint64_t i = 0; i < value.size() && i < max_items; ++i) {
    out += (i == 0 ? " " : ", ") + element(i);
  }
  if (value.size() > max_items) out += ", ...";
  return out;
}

}  // namespace dv::gguf
