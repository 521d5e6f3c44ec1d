// 2 MiB-aligned anonymous mappings, POSIX mmap (Linux and macOS); MADV_HUGEPAGE where it exists.
#include <sys/mman.h>

#include <cstdint>
#include <new>

#include "os/huge_pages.h"

namespace dv::os {

uint8_t* MapAligned(size_t size, bool huge_pages) {
  // Over-map by one huge page and trim, so the mapping starts on a 2 MiB boundary. Anonymous
  // mappings are zero-filled by the kernel.
#if defined(MAP_NORESERVE)
  const int flags = MAP_PRIVATE | MAP_ANON | MAP_NORESERVE;
#else
  const int flags = MAP_PRIVATE | MAP_ANON;
#endif
  void* raw = ::mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  auto* p = static_cast<uint8_t*>(raw);
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const size_t lead = (kHugePageBytes - addr % kHugePageBytes) % kHugePageBytes;
  if (lead > 0) ::munmap(p, lead);
  const size_t trail = kHugePageBytes - lead;
  if (trail > 0) ::munmap(p + lead + size, trail);
  uint8_t* base = p + lead;
#if defined(MADV_HUGEPAGE)
  if (huge_pages) ::madvise(base, size, MADV_HUGEPAGE);
#else
  (void)huge_pages;  // no transparent huge pages (macOS): plain pages
#endif
  return base;
}

void UnmapAligned(uint8_t* base, size_t size) { ::munmap(base, size); }

}  // namespace dv::os
