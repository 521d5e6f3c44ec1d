#include "engine/backends/cuda_gemm_dp4a.h"

namespace dv::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;  // output features per block
constexpr int kTokenTile = 8;      // tokens whose accumulators one lane holds at once

// Block (x, y): output features x*4 .. x*4+3 (one per warp), token tiles y, y + gridDim.y, ...
// Lane l reads the weight row's 4-byte groups l, l+32, ... (coalesced), and the same groups of
// each token's activations.
__global__ void GemmDp4aKernel(const int* __restrict__ w, const int* __restrict__ a,
                               int32_t* __restrict__ d, int64_t m_pad, int64_t tokens, int64_t k4,
                               int64_t ldd) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= m_pad) return;  // a whole warp leaves together: the shuffles below stay full
  const int* wr = w + row * k4;
  for (int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTokenTile; t0 < tokens;
       t0 += static_cast<int64_t>(gridDim.y) * kTokenTile) {
    const int64_t nt = tokens - t0 < kTokenTile ? tokens - t0 : kTokenTile;
    int acc[kTokenTile] = {};
    for (int64_t j = lane; j < k4; j += 32) {
      const int wv = wr[j];
#pragma unroll
      for (int t = 0; t < kTokenTile; ++t) {
        if (t < nt) acc[t] = __dp4a(wv, a[(t0 + t) * k4 + j], acc[t]);
      }
    }
#pragma unroll
    for (int t = 0; t < kTokenTile; ++t) {
      int v = acc[t];
      for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
      if (lane == 0 && t < nt) d[(t0 + t) * ldd + row] = v;
    }
  }
}

}  // namespace

cudaError_t LaunchGemmDp4a(const int8_t* w, const int8_t* a, int32_t* d, int64_t m_pad,
                           int64_t tokens, int64_t k_pad, int64_t ldd, cudaStream_t stream) {
  if (m_pad <= 0 || tokens <= 0) return cudaSuccess;
  const int64_t blocks_x = (m_pad + kWarpsPerBlock - 1) / kWarpsPerBlock;
  int64_t blocks_y = (tokens + kTokenTile - 1) / kTokenTile;
  if (blocks_y > 65535) blocks_y = 65535;  // the kernel strides over the rest
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y));
  GemmDp4aKernel<<<grid, 32 * kWarpsPerBlock, 0, stream>>>(reinterpret_cast<const int*>(w),
                                                           reinterpret_cast<const int*>(a), d,
                                                           m_pad, tokens, k_pad / 4, ldd);
  return cudaGetLastError();
}

}  // namespace dv::cuda
