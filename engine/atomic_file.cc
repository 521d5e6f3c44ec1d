#include "engine/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/safetensors.h"

namespace dv {

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw ArtifactError(path_ + ": cannot create: " + std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::Fail(const std::string& what) {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());
  }
  throw ArtifactError(path_ + ": " + what);
}

void AtomicFileWriter::Write(std::span<const uint8_t> data) {
  if (fd_ < 0) throw ArtifactError(path_ + ": written after Commit");
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd_, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      Fail(std::string("write failed: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(w);
  }
  written_ += static_cast<int64_t>(data.size());
}

void AtomicFileWriter::Commit() {
  if (fd_ < 0) throw ArtifactError(path_ + ": committed twice");
  if (::fsync(fd_) != 0) Fail("cannot flush to disk");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    ::unlink(tmp_.c_str());
    throw ArtifactError(path_ + ": cannot flush to disk");
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp_.c_str());
    throw ArtifactError(path_ + ": cannot rename into place: " + err);
  }
}

}  // namespace dv
