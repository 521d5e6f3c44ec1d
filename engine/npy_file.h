// NumPy .npy files (format version 1.0) for `generate --dump-logits`: every step's logits as a
// [steps, vocab] array that numpy.load opens. Elements are little-endian, C order.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/file_io.h"

namespace dv {

// 4-byte element types written here: '<i4' (int32 logits) and '<f4' (float32 logits).
enum class NpyElement { kInt32, kFloat32 };

// The complete header of a [rows, cols] array: magic, version 1.0, header length, and the
// dict padded with spaces to a multiple of 64 bytes in all, ending in '\n'.
std::string NpyHeader(NpyElement element, int64_t rows, int64_t cols);

// Streams a [rows, cols] array to `path` (atomically: the file appears only complete, on
// Finish). Throws FileError "<path>: ..." on I/O errors; a row of the wrong width, a row too
// many or a Finish before the last row is a DV_CHECK (the caller declared the shape).
class NpyWriter {
 public:
  NpyWriter(const std::string& path, NpyElement element, int64_t rows, int64_t cols);

  // One row of `cols` 4-byte elements in host byte order (int32_t, or float for kFloat32: the
  // caller passes the float array's storage); converted to little-endian.
  void AppendRow(const void* elements, int64_t count);
  void AppendRow(std::span<const int32_t> row) {
    AppendRow(row.data(), static_cast<int64_t>(row.size()));
  }
  // Renames the file into place; exactly `rows` rows must have been appended.
  void Finish();

  int64_t rows_written() const { return rows_written_; }

 private:
  AtomicFileWriter out_;
  int64_t rows_ = 0, cols_ = 0, rows_written_ = 0;
  std::vector<uint8_t> buffer_;
};

}  // namespace dv
