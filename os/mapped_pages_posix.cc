// POSIX (Linux and macOS): sysconf and madvise.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#include "os/mapped_pages.h"

namespace dv::os {

size_t PageBytes() {
  const long page = ::sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<size_t>(page) : 4096;
}

void ReleaseFilePages(const uint8_t* begin, size_t size) {
  const uintptr_t page = PageBytes();
  const auto at = reinterpret_cast<uintptr_t>(begin);
  const uintptr_t first = (at + page - 1) / page * page;
  const uintptr_t last = (at + size) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace dv::os
