#include "engine/npy_file.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/check.h"

namespace dv {
namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes

const char* Descr(NpyElement e) { return e == NpyElement::kInt32 ? "<i4" : "<f4"; }

}  // namespace

std::string NpyHeader(NpyElement element, int64_t rows, int64_t cols) {
  std::string dict = std::string("{'descr': '") + Descr(element) +
                     "', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                     std::to_string(cols) + "), }";
  // As numpy.save writes it: room for the first dimension to grow to 21 digits, then spaces and
  // '\n' to a multiple of 64 bytes including the 6 magic, 2 version and 2 length bytes.
  dict.append(21 - std::min<size_t>(21, std::to_string(rows).size()), ' ');
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string header(kMagic, 6);
  header.push_back('\x01');
  header.push_back('\x00');
  header.push_back(static_cast<char>(dict.size() & 0xff));
  header.push_back(static_cast<char>(dict.size() >> 8));
  return header + dict;
}

NpyWriter::NpyWriter(const std::string& path, NpyElement element, int64_t rows, int64_t cols)
    : out_(path), rows_(rows), cols_(cols), buffer_(static_cast<size_t>(cols) * 4) {
  const std::string header = NpyHeader(element, rows, cols);
  out_.Write({reinterpret_cast<const uint8_t*>(header.data()), header.size()});
}

void NpyWriter::AppendRow(const void* elements, int64_t count) {
  DV_CHECK(count == cols_) << out_.path() << ": a row of " << count << " elements, the array has "
                           << cols_ << " columns";
  DV_CHECK(rows_written_ < rows_) << out_.path() << ": more rows than the " << rows_ << " declared";
  std::memcpy(buffer_.data(), elements, buffer_.size());
  if constexpr (std::endian::native == std::endian::big) {
    for (size_t i = 0; i < buffer_.size(); i += 4) {
      std::swap(buffer_[i], buffer_[i + 3]);
      std::swap(buffer_[i + 1], buffer_[i + 2]);
    }
  }
  out_.Write(buffer_);
  ++rows_written_;
}

void NpyWriter::Finish() {
  DV_CHECK(rows_written_ == rows_)
      << out_.path() << ": " << rows_written_ << " of " << rows_ << " rows written";
  out_.Commit();
}

}  // namespace dv
