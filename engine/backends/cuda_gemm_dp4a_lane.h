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

// Four ints of a row (16 bytes) as one load: LDG.128 on the device.
struct alignas(16) Dp4aGroup {
  int v[4];
};
DV_INLINE Dp4aGroup LoadDp4aGroup(const int* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const Dp4aGroup*>(p);
#else
  return {{p[0], p[1], p[2], p[3]}};
#endif
}

// Whether a lane reads 16 bytes at a time: the rows are whole groups of 4 ints (k4 % 4 == 0,
// every real model's k) and start on 16 bytes. The same for every lane of a warp (one weight row
// and one token tile), so the warp's shuffles below stay full.
DV_INLINE bool Dp4aLoads16(const int* w_row, const int* a_tile, int64_t k4) {
  return k4 % 4 == 0 &&
         (reinterpret_cast<uintptr_t>(w_row) | reinterpret_cast<uintptr_t>(a_tile)) % 16 == 0;
}

// Lane `lane`'s partial dot products of weight row w_row (k4 groups of 4 int8, as ints) with the
// nt <= kDp4aTokenTile token rows starting at a_tile (row stride k4), coalesced across the warp:
// 16-byte groups lane, lane + 32, ... where Dp4aLoads16 allows (a warp reads 512 contiguous bytes
// of the row a step, a quarter of the load instructions), else ints lane, lane + 32, .... acc[t]
// for t < nt; the rest stay 0. Which lane adds which product does not change the warp's sum:
// every partial is a sum of some of the row's products, exact in int32 (the bound below).
DV_INLINE void Dp4aLanePartials(const int* w_row, const int* a_tile, int64_t k4, int64_t nt,
                                int lane, int* acc) {
  for (int t = 0; t < kDp4aTokenTile; ++t) acc[t] = 0;
  if (Dp4aLoads16(w_row, a_tile, k4)) {
    for (int64_t j = 4 * static_cast<int64_t>(lane); j < k4; j += 4 * kDp4aWarp) {
      const Dp4aGroup wv = LoadDp4aGroup(w_row + j);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int t = 0; t < kDp4aTokenTile; ++t) {
        if (t < nt) {
          const Dp4aGroup av = LoadDp4aGroup(a_tile + t * k4 + j);
          for (int q = 0; q < 4; ++q) acc[t] = Dp4a(wv.v[q], av.v[q], acc[t]);
        }
      }
    }
    return;
  }
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
