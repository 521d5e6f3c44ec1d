#include "tests/fuzz/fuzz_support.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

namespace dv::fuzz {

const std::string& ScratchDir() {
  // Never destroyed: the exit handler that removes the folder runs after static destructors.
  static const std::string* const dir = [] {
    std::string root = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "";
    if (root.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      root = tmp && *tmp ? tmp : "/tmp";
    }
    auto* d = new std::string(root + "/dv-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ScratchDir(), ignored);
    });
    return d;
  }();
  return *dir;
}

void WriteScratchFile(const std::string& path, std::string_view bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  close(fd);
}

}  // namespace dv::fuzz
