// The reference backend: plain scalar loops, one thread. The definition of correct that every
// other backend is tested against with exact equality.
#pragma once

#include "engine/backends/backend.h"

namespace dv {

std::unique_ptr<Backend> MakeReferenceBackend();

// c[m, n] = a[m, k] * w8t[k, n] in int32, the obvious triple loop.
void MatmulI8Ref(const int8_t* a, int64_t m, int64_t k, const int8_t* w8t, int64_t n, int32_t* c);

}  // namespace dv
