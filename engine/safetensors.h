// The safetensors container (u64 little-endian header length, JSON header, little-endian C-order
// data), read from a memory-mapped file and written atomically. Values are decoded from
// little-endian bytes explicitly, whatever the host's byte order.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/expected_error.h"
#include "base/file_io.h"

namespace dv {

// An expected failure reading or writing an artifact; what() is one line naming the file.
class ArtifactError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

enum class DType { kI8, kI16, kI32, kI64, kU8, kF16, kBF16, kF32, kF64, kBool, kOther };

const char* DTypeName(DType dtype);
int64_t DTypeSize(DType dtype);  // bytes per element; 0 for kOther
bool IsIntegerDType(DType dtype);

struct TensorView {
  std::string name;
  DType dtype = DType::kOther;
  std::string dtype_name;  // as written in the header
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;  // into the mapped file

  int64_t numel() const;
};

// A read-only memory map of a whole file; movable, unmaps on destruction.
class MappedFile {
 public:
  static MappedFile Open(const std::string& path);  // throws ArtifactError
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

inline constexpr uint64_t kMaxSafetensorsHeader = uint64_t{100} << 20;  // 100 MiB

// Parses and validates the container: header length within the file and <= 100 MiB, header a
// JSON object, every tensor with a known dtype, a non-negative shape, offsets inside the data
// section that match shape x dtype size, and no two tensors overlapping. `path` only names the
// file in errors. Throws ArtifactError.
std::map<std::string, TensorView> ParseSafetensors(std::span<const uint8_t> file,
                                                   const std::string& path);

// Little-endian element decoding (host-independent).
int64_t ReadLeInt(const uint8_t* p, int64_t size_bytes);    // sign-extends I16/I32/I64
std::vector<int64_t> DecodeIntTensor(const TensorView& t);  // any integer dtype, widened

// A tensor to write: bytes already little-endian.
struct TensorData {
  DType dtype = DType::kI8;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

TensorData MakeTensor(DType dtype, std::vector<int64_t> shape, std::span<const int64_t> values);
TensorData MakeTensorI8(std::vector<int64_t> shape, std::vector<int8_t> values);

// Writes tensors (names sorted, offsets in that order, header padded with spaces to a multiple
// of 8) to `path` through a temporary file and a rename, so a crash leaves no partial file.
// Throws FileError (base/file_io.h) when the file cannot be written.
void WriteSafetensors(const std::string& path, const std::map<std::string, TensorData>& tensors);

}  // namespace dv
