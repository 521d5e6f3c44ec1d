// The arithmetic of the dp4a GEMM kernel (engine/backends/cuda_gemm_dp4a.cu), one lane's share
// and the warp's sum, as functions the device kernel and the host both compile: the host runs
// them lane by lane in the kernel's order (tests/cuda_backend), so the indexing, the token tile
// and the shuffle tree are tested on a machine without a GPU; on the device __dp4a does what
// Dp4a does here.
#pragma once

#include <cstdint>

#include "engine/intmath.h"

namespace dv::cuda {

inline constexpr int kDp4aWarp = 32;
inline constexpr int kDp4aWarpsPerBlock = 4;  // output features per block
inline constexpr int kDp4aTokenTile = 8;      // tokens whose accumulators one lane holds at once

// c + the four signed byte products of a and b (the bytes of each int, little-endian), modulo
// 2^32: PTX dp4a.s32.s32.
DV_INLINE int Dp4a(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(a, b, c);
#else
  uint32_t sum = static_cast<uint32_t>(c);
  for (int byte = 0; byte < 4; ++byte) {
    const auto x = static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * byte));
    const auto y = static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * byte));
    sum += static_cast<uint32_t>(x * y);
  }
  return static_cast<int>(sum);
#endif
}

// Lane `lane`'s partial dot products of weight row w_row (k4 groups of 4 int8, as ints) with the
// nt <= kDp4aTokenTile token rows starting at a_tile (row stride k4): groups lane, lane + 32, ...
// (coalesced across the warp). acc[t] for t < nt; the rest stay 0.
DV_INLINE void Dp4aLanePartials(const int* w_row, const int* a_tile, int64_t k4, int64_t nt,
                                int lane, int* acc) {
  for (int t = 0; t < kDp4aTokenTile; ++t) acc[t] = 0;
  for (int64_t j = lane; j < k4; j += kDp4aWarp) {
    const int wv = w_row[j];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int t = 0; t < kDp4aTokenTile; ++t) {
      if (t < nt) acc[t] = Dp4a(wv, a_tile[t * k4 + j], acc[t]);
    }
  }
}

// One step of the warp's shuffle-down sum: lane l adds lane l + offset's value (offsets 16, 8,
// 4, 2, 1; a lane with no partner gets its own value back; lane 0 ends with the sum of all 32).
// Lane 0's sums are exact: each is a sum of a subset of the row's k products, |.| <= k * 127 *
// 128 < 2^31 (checked at load). The other lanes' values are never used; the add wraps (as the
// hardware's does), so doubling one cannot be undefined behaviour in the host's emulation.
DV_INLINE int WarpSumStep(int mine, int from_lane_plus_offset) {
  return static_cast<int>(static_cast<uint32_t>(mine) +
                          static_cast<uint32_t>(from_lane_plus_offset));
}

}  // namespace dv::cuda
