// A file written through a temporary beside it and renamed into place on Commit(), so readers
// see the old file or the complete new one, never a partial one. Without Commit() (an error, an
// exception unwinding) the temporary is removed.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace dv {

class AtomicFileWriter {
 public:
  // Creates "<path>.tmp.<pid>". Throws ArtifactError "<path>: ..." when it cannot.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void Write(std::span<const uint8_t> data);  // appends; throws ArtifactError
  void Commit();                              // fsync, close, rename; throws ArtifactError
  const std::string& path() const { return path_; }
  int64_t bytes_written() const { return written_; }

 private:
  [[noreturn]] void Fail(const std::string& what);
  std::string path_, tmp_;
  int fd_ = -1;
  int64_t written_ = 0;
};

}  // namespace dv
