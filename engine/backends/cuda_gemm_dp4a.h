// The plain int8 GEMM kernel of the cuda backend (engine/backends/cuda_backend.h): one warp per
// output feature, __dp4a over groups of four int8 products into int32 lanes, a warp-shuffle sum.
// Exact: every partial sum is a sum of a subset of the k products, bounded by k * 127 * 128 <
// 2^31 (checked at load), so no lane and no step of the tree can wrap, and the order of the
// additions cannot change the result.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace dv::cuda {

// d[t * ldd + o] = sum_j w[o * k_pad + j] * a[t * k_pad + j], for o < m_pad and t < tokens.
// w, a and d are device pointers, 4-byte aligned; k_pad is a multiple of 4. Enqueued on
// `stream`; returns the launch's error.
cudaError_t LaunchGemmDp4a(const int8_t* w, const int8_t* a, int32_t* d, int64_t m_pad,
                           int64_t tokens, int64_t k_pad, int64_t ldd, cudaStream_t stream);

}  // namespace dv::cuda
