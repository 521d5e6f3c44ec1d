// Whole-file reads with a size bound that refuse anything but a regular file (a FIFO would block
// the reader, a device would never end), reads in pieces for hashing, and atomic writes
// (temporary file, fsync, rename) so that a crash never leaves a half-written output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace dv {

inline constexpr size_t kMiB = size_t{1} << 20;

// Reads all of `path` into `out` when it is a regular file of at most `max_bytes` bytes.
// Otherwise returns false with `error` set to the problem without the path ("no such file",
// "a FIFO, not a regular file", "larger than 16 MiB", "read failed: <errno text>"), so that the
// caller can raise its own error type. Files that report size 0 (/proc) are read to their end,
// up to the bound. Opening never blocks (O_NONBLOCK), whatever the file is.
bool ReadFileBounded(const std::string& path, size_t max_bytes, std::string& out,
                     std::string& error);

// The same, throwing FileError "<path>: <problem>".
std::string ReadFileBounded(const std::string& path, size_t max_bytes);

// Calls `piece` with consecutive pieces of a regular file (any size). Throws FileError as above.
void ReadFileInPieces(const std::string& path,
                      const std::function<void(std::span<const uint8_t>)>& piece);

// A file written through a temporary beside it, "<path>.tmp.<pid>", and renamed into place on
// Commit() after an fsync: readers see the old file or the complete new one, never a partial
// one. Without Commit() (an error, an exception unwinding) the temporary is removed. For outputs
// written in pieces (a synthetic checkpoint tensor by tensor, a .npy row by row); whole buffers
// use WriteFileAtomic. Throws FileError "<path>: <problem>".
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);  // creates the temporary
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void Write(std::span<const uint8_t> data);  // appends
  void Commit();                              // fsync, close, rename
  const std::string& path() const { return path_; }
  int64_t bytes_written() const { return written_; }

 private:
  [[noreturn]] void Fail(const std::string& what);
  std::string path_, tmp_;
  int fd_ = -1;
  int64_t written_ = 0;
};

// Writes `data` to `path` through an AtomicFileWriter: readers see the old file or the whole new
// one. Throws FileError "<path>: <problem>" (and leaves no temporary file behind).
void WriteFileAtomic(const std::string& path, std::span<const uint8_t> data);
inline void WriteFileAtomic(const std::string& path, std::string_view text) {
  WriteFileAtomic(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

// mkdir -p (mode 0755). Throws FileError "<part>: cannot create folder: <errno text>" naming the
// first part that cannot be created.
void MakeDirectories(const std::string& path);

// True when `path` exists (following symlinks), whatever it is.
bool PathExists(const std::string& path);

// "a FIFO", "a folder", "a character device"... for a path that exists and is not a regular
// file; "" for a regular file or a path that does not exist.
std::string NonRegularKind(const std::string& path);

}  // namespace dv
