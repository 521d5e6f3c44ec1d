// Counts every allocation of the executable it is linked into: tests/support/allocation_counter.cc
// replaces the global operator new (so it belongs in test programs of their own, listed among
// their sources) and counts each call. For tests that assert a path allocates nothing.
#pragma once

#include <cstdint>

namespace dv::test {

// Calls of the global operator new so far in this process.
int64_t AllocationsSoFar();

}  // namespace dv::test
