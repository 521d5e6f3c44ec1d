#include "db/staged_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "db/db_error.h"

namespace dv::db {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSuffix = ".tmp";

// fsync(2) the staged file before it takes the destination's name.
void SyncFile(const std::string& path, const std::string& label) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw DbError(label + ": cannot open " + path + " to flush it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw DbError(label + ": cannot flush " + path + " to disk");
}

// fsync(2) the directory so that the new name is durable. Best effort: the link has happened,
// and some file systems refuse fsync on a directory.
void SyncDirectory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

int64_t FileSize(const std::string& path) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  return error ? 0 : static_cast<int64_t>(size);
}

}  // namespace

StagedFile::StagedFile(const std::string& destination, const char* infix) {
  static std::atomic<int> counter{0};
  path_ =
      destination + infix + std::to_string(::getpid()) + "-" + std::to_string(counter++) + kSuffix;
  Remove();
}

StagedFile::~StagedFile() { Remove(); }

void StagedFile::Remove() const {
  std::error_code ignored;
  for (const char* suffix : {"", "-journal", "-wal", "-shm"}) fs::remove(path_ + suffix, ignored);
}

bool StagedFile::PlaceIfAbsent(const std::string& destination) const {
  SyncFile(path_, destination);
  if (::link(path_.c_str(), destination.c_str()) != 0) {
    if (errno == EEXIST) return false;
    throw DbError(destination + ": cannot create it (" + std::strerror(errno) + ")");
  }
  std::error_code error;
  SyncDirectory(fs::absolute(fs::path(destination), error).parent_path().string());
  return true;
}

void RemoveStaleStagedFiles(const std::string& destination, const char* infix) {
  std::error_code error;
  const fs::path out = fs::absolute(fs::path(destination), error);
  if (error) return;
  const std::string prefix = out.filename().string() + infix;
  for (const fs::directory_entry& entry : fs::directory_iterator(out.parent_path(), error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.find(kSuffix) == std::string::npos) {
      continue;
    }
    long pid = 0;
    try {
      pid = std::stol(rest.substr(0, dash));
    } catch (const std::exception&) {
      continue;
    }
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) {
      std::error_code ignored;
      fs::remove(entry.path(), ignored);
    }
  }
}

void RequireNoOrphanedLog(const std::string& path) {
  for (const char* suffix : {"-wal", "-journal"}) {
    if (FileSize(path + suffix) != 0) {
      throw DbError(path + ": " + path + suffix + " exists without its database; remove it first");
    }
  }
}

}  // namespace dv::db
