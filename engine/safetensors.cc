#include "engine/safetensors.h"

#include "base/file_io.h"
#include "base/strict_json.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace dv {
namespace {

struct DTypeInfo {
  const char* name;
  DType dtype;
  int64_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {"I8", DType::kI8, 1},     {"I16", DType::kI16, 2}, {"I32", DType::kI32, 4},
    {"I64", DType::kI64, 8},   {"U8", DType::kU8, 1},   {"F16", DType::kF16, 2},
    {"BF16", DType::kBF16, 2}, {"F32", DType::kF32, 4}, {"F64", DType::kF64, 8},
    {"BOOL", DType::kBool, 1},
};

DType ParseDType(const std::string& s) {
  for (const DTypeInfo& d : kDTypes) {
    if (s == d.name) return d.dtype;
  }
  return DType::kOther;
}

[[noreturn]] void Fail(const std::string& path, const std::string& what) {
  throw ArtifactError(path + ": " + what);
}

}  // namespace

const char* DTypeName(DType dtype) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

int64_t DTypeSize(DType dtype) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.dtype == dtype) return d.size;
  }
  return 0;
}

bool IsIntegerDType(DType dtype) {
  return dtype == DType::kI8 || dtype == DType::kI16 || dtype == DType::kI32 ||
         dtype == DType::kI64;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

MappedFile MappedFile::Open(const std::string& path) {
  MappedFile f;
  f.path_ = path;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; the S_ISREG check
  // below then refuses it (and devices) at once. It changes nothing for regular files.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) Fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    const std::string kind = NonRegularKind(path);
    Fail(path, kind.empty() ? "not a regular file" : kind + ", not a regular file");
  }
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      Fail(path, std::string("cannot map: ") + std::strerror(errno));
    }
    f.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return f;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

int64_t ReadLeInt(const uint8_t* p, int64_t size_bytes) {
  uint64_t v = 0;
  for (int64_t i = size_bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  const int shift = static_cast<int>(64 - 8 * size_bytes);
  if (shift == 0) return static_cast<int64_t>(v);
  // Sign-extend from size_bytes*8 bits through the unsigned representation.
  const uint64_t sign = uint64_t{1} << (8 * size_bytes - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

std::vector<int64_t> DecodeIntTensor(const TensorView& t) {
  const int64_t size = DTypeSize(t.dtype);
  const int64_t n = t.numel();
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = ReadLeInt(t.bytes.data() + i * size, size);
  return out;
}

std::map<std::string, TensorView> ParseSafetensors(std::span<const uint8_t> file,
                                                   const std::string& path) {
  if (file.size() < 8) Fail(path, "truncated: shorter than the 8-byte header length");
  const auto header_len = static_cast<uint64_t>(ReadLeInt(file.data(), 8));
  if (header_len > kMaxSafetensorsHeader) {
    Fail(path, "header length " + std::to_string(header_len) + " exceeds the 100 MiB limit");
  }
  if (header_len > file.size() - 8) {
    Fail(path, "truncated: header length " + std::to_string(header_len) + " runs past the end (" +
                   std::to_string(file.size()) + " bytes)");
  }
  const std::string_view header_text(reinterpret_cast<const char*>(file.data() + 8), header_len);
  nlohmann::json header;
  JsonProblem problem;
  if (!ParseJsonStrict(header_text, header, problem)) {
    Fail(path, problem.kind == JsonProblem::Kind::kMalformed
                   ? "malformed header JSON (" + problem.message + ")"
                   : "ambiguous header: " + problem.message);
  }
  if (!header.is_object()) Fail(path, "malformed header: not a JSON object");
  const std::span<const uint8_t> data = file.subspan(8 + header_len);

  std::map<std::string, TensorView> tensors;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = "tensor '" + name + "'";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets")) {
      Fail(path, where + " needs dtype, shape and data_offsets");
    }
    const auto& jd = entry["dtype"];
    const auto& js = entry["shape"];
    const auto& jo = entry["data_offsets"];
    if (!jd.is_string() || !js.is_array() || !jo.is_array() || jo.size() != 2 ||
        !jo[0].is_number_unsigned() || !jo[1].is_number_unsigned()) {
      Fail(path, where + " has a malformed dtype, shape or data_offsets");
    }
    TensorView t;
    t.name = name;
    t.dtype_name = jd.get<std::string>();
    t.dtype = ParseDType(t.dtype_name);
    if (t.dtype == DType::kOther) Fail(path, where + " has unknown dtype " + t.dtype_name);
    uint64_t numel = 1;
    for (const auto& dim : js) {
      if (!dim.is_number_unsigned()) Fail(path, where + " has a negative or non-integer dim");
      const auto v = dim.get<uint64_t>();
      if (v > (uint64_t{1} << 40) || (v != 0 && numel > (uint64_t{1} << 42) / v)) {
        Fail(path, where + " has an implausibly large shape");
      }
      numel *= v;
      t.shape.push_back(static_cast<int64_t>(v));
    }
    const auto begin = jo[0].get<uint64_t>();
    const auto end = jo[1].get<uint64_t>();
    if (begin > end || end > data.size()) {
      Fail(path, where + " data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") out of range (data section " + std::to_string(data.size()) + " bytes)");
    }
    const uint64_t want = numel * static_cast<uint64_t>(DTypeSize(t.dtype));
    if (end - begin != want) {
      Fail(path, where + " holds " + std::to_string(end - begin) + " bytes, shape x dtype needs " +
                     std::to_string(want));
    }
    t.bytes = data.subspan(begin, end - begin);
    ranges.emplace_back(begin, end);
    tensors.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      Fail(path, "tensors overlap at data offset " + std::to_string(ranges[i].first));
    }
  }
  return tensors;
}

TensorData MakeTensor(DType dtype, std::vector<int64_t> shape, std::span<const int64_t> values) {
  TensorData t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  const int64_t size = DTypeSize(dtype);
  t.bytes.resize(values.size() * static_cast<size_t>(size));
  for (size_t i = 0; i < values.size(); ++i) {
    const auto v = static_cast<uint64_t>(values[i]);
    for (int64_t b = 0; b < size; ++b) {
      t.bytes[i * static_cast<size_t>(size) + static_cast<size_t>(b)] =
          static_cast<uint8_t>(v >> (8 * b));
    }
  }
  return t;
}

TensorData MakeTensorI8(std::vector<int64_t> shape, std::vector<int8_t> values) {
  TensorData t;
  t.dtype = DType::kI8;
  t.shape = std::move(shape);
  t.bytes.resize(values.size());
  std::memcpy(t.bytes.data(), values.data(), values.size());
  return t;
}

void WriteSafetensors(const std::string& path, const std::map<std::string, TensorData>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", DTypeName(t.dtype)},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + offset);
  const uint64_t len = text.size();
  for (int b = 0; b < 8; ++b) out.push_back(static_cast<uint8_t>(len >> (8 * b)));
  out.insert(out.end(), text.begin(), text.end());
  for (const auto& [name, t] : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  WriteFileAtomic(path, out);
}

}  // namespace dv
