#include "engine/backends/cuda_gemm_dp4a.h"

#include "engine/backends/cuda_gemm_dp4a_lane.h"

namespace dv::cuda {
namespace {

// Block (x, y): output features x*4 .. x*4+3 (one per warp), token tiles y, y + gridDim.y, ...
// The lane arithmetic is Dp4aLanePartials (cuda_gemm_dp4a_lane.h), which the host tests run too.
__global__ void GemmDp4aKernel(const int* __restrict__ w, const int* __restrict__ a,
                               int32_t* __restrict__ d, int64_t m_pad, int64_t tokens, int64_t k4,
                               int64_t ldd) {
  const int lane = static_cast<int>(threadIdx.x % kDp4aWarp);
  const int64_t row =
      static_cast<int64_t>(blockIdx.x) * kDp4aWarpsPerBlock + threadIdx.x / kDp4aWarp;
  if (row >= m_pad) return;  // a whole warp leaves together: the shuffles below stay full
  for (int64_t t0 = static_cast<int64_t>(blockIdx.y) * kDp4aTokenTile; t0 < tokens;
       t0 += static_cast<int64_t>(gridDim.y) * kDp4aTokenTile) {
    const int64_t nt = tokens - t0 < kDp4aTokenTile ? tokens - t0 : kDp4aTokenTile;
    int acc[kDp4aTokenTile];
    Dp4aLanePartials(w + row * k4, a + t0 * k4, k4, nt, lane, acc);
#pragma unroll
    for (int t = 0; t < kDp4aTokenTile; ++t) {
      int v = acc[t];
      for (int offset = kDp4aWarp / 2; offset > 0; offset /= 2) {
        v = WarpSumStep(v, __shfl_down_sync(0xffffffffu, v, offset));
      }
      if (lane == 0 && t < nt) d[(t0 + t) * ldd + row] = v;
    }
  }
}

}  // namespace

cudaError_t LaunchGemmDp4a(const int8_t* w, const int8_t* a, int32_t* d, int64_t m_pad,
                           int64_t tokens, int64_t k_pad, int64_t ldd, cudaStream_t stream) {
  if (m_pad <= 0 || tokens <= 0) return cudaSuccess;
  const int64_t blocks_x = (m_pad + kDp4aWarpsPerBlock - 1) / kDp4aWarpsPerBlock;
  int64_t blocks_y = (tokens + kDp4aTokenTile - 1) / kDp4aTokenTile;
  if (blocks_y > 65535) blocks_y = 65535;  // the kernel strides over the rest
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y));
  GemmDp4aKernel<<<grid, kDp4aWarp * kDp4aWarpsPerBlock, 0, stream>>>(
      reinterpret_cast<const int*>(w), reinterpret_cast<const int*>(a), d, m_pad, tokens, k_pad / 4,
      ldd);
  return cudaGetLastError();
}

}  // namespace dv::cuda
