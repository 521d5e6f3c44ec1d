// Pages of a read-only file mapping given back to the OS once their bytes have been copied, so
// that a model widened into its own memory does not also keep the file's pages resident.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dv::os {

// The system's page size in bytes (4096 where the OS will not say).
size_t PageBytes();

// Advises the OS that the whole pages inside [begin, begin + size) of a private read-only file
// mapping are not needed (madvise MADV_DONTNEED): Linux drops them at once and reads them back
// from the page cache on the next access; macOS treats it as a hint. Never call it on anonymous
// memory, which Linux would zero. Partial pages at either end are kept.
void ReleaseFilePages(const uint8_t* begin, size_t size);

}  // namespace dv::os
