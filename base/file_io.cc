#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/expected_error.h"

namespace dv {
namespace {

std::string KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "";
}

std::string SizeText(size_t bytes) {
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// A read-only descriptor of a regular file, or -1 with `error` set.
int OpenRegular(const std::string& path, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    error = errno == ENOENT ? "no such file" : std::string("cannot open: ") + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = std::string("cannot stat: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    const std::string kind = KindOf(st.st_mode);
    error = kind.empty() ? "not a regular file" : kind + ", not a regular file";
    ::close(fd);
    return -1;
  }
  return fd;
}

// read(2) until `size` bytes or the end; returns the count, or -1 with `error` set.
ssize_t ReadSome(int fd, uint8_t* out, size_t size, std::string& error) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, out + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = std::string("read failed: ") + std::strerror(errno);
      return -1;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace

bool ReadFileBounded(const std::string& path, size_t max_bytes, std::string& out,
                     std::string& error) {
  out.clear();
  const int fd = OpenRegular(path, error);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0 && static_cast<uint64_t>(st.st_size) > max_bytes) {
    error = "larger than " + SizeText(max_bytes) + " (" + std::to_string(st.st_size) + " bytes)";
    ::close(fd);
    return false;
  }
  // Read one byte past the bound: a file that grew, or one that reports size 0, is caught too.
  constexpr size_t kPiece = 1 << 16;
  for (;;) {
    const size_t want = std::min(kPiece, max_bytes + 1 - out.size());
    const size_t at = out.size();
    out.resize(at + want);
    const ssize_t got = ReadSome(fd, reinterpret_cast<uint8_t*>(out.data()) + at, want, error);
    if (got < 0) {
      ::close(fd);
      out.clear();
      return false;
    }
    out.resize(at + static_cast<size_t>(got));
    if (out.size() > max_bytes) {
      error = "larger than " + SizeText(max_bytes);
      ::close(fd);
      out.clear();
      return false;
    }
    if (static_cast<size_t>(got) < want) break;  // the end
  }
  ::close(fd);
  return true;
}

std::string ReadFileBounded(const std::string& path, size_t max_bytes) {
  std::string out, error;
  if (!ReadFileBounded(path, max_bytes, out, error)) throw FileError(path + ": " + error);
  return out;
}

void ReadFileInPieces(const std::string& path,
                      const std::function<void(std::span<const uint8_t>)>& piece) {
  std::string error;
  const int fd = OpenRegular(path, error);
  if (fd < 0) throw FileError(path + ": " + error);
  std::vector<uint8_t> buffer(size_t{1} << 20);
  for (;;) {
    const ssize_t got = ReadSome(fd, buffer.data(), buffer.size(), error);
    if (got < 0) {
      ::close(fd);
      throw FileError(path + ": " + error);
    }
    if (got > 0) piece({buffer.data(), static_cast<size_t>(got)});
    if (static_cast<size_t>(got) < buffer.size()) break;
  }
  ::close(fd);
}

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw FileError(path_ + ": cannot create: " + std::strerror(errno));
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
  throw FileError(path_ + ": " + what);
}

void AtomicFileWriter::Write(std::span<const uint8_t> data) {
  DV_CHECK(fd_ >= 0) << path_ << ": written after Commit";
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
  DV_CHECK(fd_ >= 0) << path_ << ": committed twice";
  if (::fsync(fd_) != 0) Fail("cannot flush to disk");
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    ::unlink(tmp_.c_str());
    throw FileError(path_ + ": cannot flush to disk");
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp_.c_str());
    throw FileError(path_ + ": cannot rename into place: " + err);
  }
}

void WriteFileAtomic(const std::string& path, std::span<const uint8_t> data) {
  AtomicFileWriter out(path);
  out.Write(data);
  out.Commit();
}

void MakeDirectories(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string part = path.substr(0, i);
      if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
        throw FileError(part + ": cannot create folder: " + std::strerror(errno));
      }
    }
  }
}

bool PathExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string NonRegularKind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  const std::string kind = KindOf(st.st_mode);
  return kind.empty() ? "not a regular file" : kind;
}

}  // namespace dv
