// macOS has no transparent huge pages (superpages exist only for explicit VM_FLAGS_SUPERPAGE
// allocations, which cannot be advised after the fact): the cpu backend runs on plain pages.
#include "os/huge_pages.h"

namespace dv::os {

const char* HugePageMode() { return "none"; }
int64_t AnonHugePageBytes() { return -1; }

}  // namespace dv::os
