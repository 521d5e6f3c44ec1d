// Anonymous memory aligned to 2 MiB, advised for transparent huge pages where the OS has them
// (Linux MADV_HUGEPAGE; macOS has no THP: plain zero-filled pages), and what the OS says about
// huge pages. For the cpu backend's weight arena and K/V cache.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dv::os {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `size` bytes (a multiple of kHugePageBytes) of zeroed anonymous memory starting on a 2 MiB
// boundary, huge pages advised when `huge_pages` and the OS has them. Throws std::bad_alloc when
// the mapping fails. Free with UnmapAligned(base, size).
uint8_t* MapAligned(size_t size, bool huge_pages);
void UnmapAligned(uint8_t* base, size_t size);

// The system's transparent-huge-page policy ("always", "madvise", "never"; "none" where the OS
// has no such thing, macOS), or "unknown".
const char* HugePageMode();

// Bytes of this process's anonymous memory backed by huge pages, -1 when unknown.
int64_t AnonHugePageBytes();

}  // namespace dv::os
