// aarch64 Advanced SIMD int8 GEMM kernel (built for aarch64 only; NEON is part of its base ABI).
//
// Exactness: vmull_s8 forms each int8 x int8 product in an int16 lane (|product| <= 2^14, so
// no overflow), and vpadalq_s16 adds adjacent pairs into int32 accumulators. (vmlal_s8 would
// add two products in int16 first: 2 * 128 * 128 = 2^15 overflows; it is not used.) int32 sums
// wrap modulo 2^32 and the true result fits int32, so the result is exact for every int8 input.
//
// Layout: 16-column panels of signed weights (matmul_i8_cpu.h). A 16-byte quarter of a group is
// 4 columns x 4 k values; against (a0 a1 a2 a3 a0 a1 a2 a3) each half leaves two partial sums
// per column, and vpaddq_s32 adds them at the end. Like the x86 kernels, this file includes only
// intrinsics and the kernel declarations; every function is internal.
#include <arm_neon.h>

#include <cstring>

#include "engine/backends/matmul_i8_cpu.h"

namespace dv {
namespace {

constexpr int64_t kNr = 16;
constexpr int kMaxRows = 2;

inline int8x16_t BroadcastGroup(const int8_t* a) {
  int32_t v;
  std::memcpy(&v, a, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// Rows [0, kRows) of a (lda bytes apart, lda a multiple of 4) times one panel.
template <int kRows>
void Block(const int8_t* a, int64_t lda, const int8_t* panel, int32_t* c, int64_t ldc,
           int64_t cols) {
  constexpr size_t kR = kRows;
  int32x4_t acc[kR][8];
#pragma GCC unroll 8
  for (size_t r = 0; r < kR; ++r) {
#pragma GCC unroll 8
    for (size_t q = 0; q < 8; ++q) acc[r][q] = vdupq_n_s32(0);
  }
  for (int64_t g = 0; g < lda / 4; ++g) {
    int8x16_t b[kR];
#pragma GCC unroll 8
    for (size_t r = 0; r < kR; ++r)
      b[r] = BroadcastGroup(a + static_cast<int64_t>(r) * lda + 4 * g);
    const int8_t* w = panel + g * kNr * 4;
#pragma GCC unroll 4
    for (size_t q = 0; q < 4; ++q) {
      const int8x16_t wq = vld1q_s8(w + 16 * q);
#pragma GCC unroll 8
      for (size_t r = 0; r < kR; ++r) {
        acc[r][2 * q] = vpadalq_s16(acc[r][2 * q], vmull_s8(vget_low_s8(wq), vget_low_s8(b[r])));
        acc[r][2 * q + 1] = vpadalq_s16(acc[r][2 * q + 1], vmull_high_s8(wq, b[r]));
      }
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < kR; ++r) {
    int32_t out[kNr];
#pragma GCC unroll 4
    for (size_t q = 0; q < 4; ++q)
      vst1q_s32(out + 4 * q, vpaddq_s32(acc[r][2 * q], acc[r][2 * q + 1]));
    std::memcpy(c + static_cast<int64_t>(r) * ldc, out,
                static_cast<size_t>(cols) * sizeof(int32_t));
  }
}

void MatmulNeon(const MatmulI8Args& args, int64_t panel_begin, int64_t panel_end) {
  const int64_t panel_bytes = args.lda * kNr;
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const int8_t* panel = reinterpret_cast<const int8_t*>(args.panels) + p * panel_bytes;
    const int64_t col0 = p * kNr;
    const int64_t cols = args.n - col0 < kNr ? args.n - col0 : kNr;
    int64_t r = 0;
    for (; r + kMaxRows <= args.m; r += kMaxRows) {
      Block<kMaxRows>(args.a + r * args.lda, args.lda, panel, args.c + r * args.n + col0, args.n,
                      cols);
    }
    if (r < args.m) {
      Block<1>(args.a + r * args.lda, args.lda, panel, args.c + r * args.n + col0, args.n, cols);
    }
  }
}

uint64_t StreamReadNeon(const uint8_t* p, int64_t n, int64_t) {
  uint64x2_t a0 = vdupq_n_u64(0), a1 = vdupq_n_u64(0), a2 = vdupq_n_u64(0), a3 = vdupq_n_u64(0);
  for (int64_t i = 0; i < n; i += 64) {
    a0 = vaddq_u64(a0, vreinterpretq_u64_u8(vld1q_u8(p + i)));
    a1 = vaddq_u64(a1, vreinterpretq_u64_u8(vld1q_u8(p + i + 16)));
    a2 = vaddq_u64(a2, vreinterpretq_u64_u8(vld1q_u8(p + i + 32)));
    a3 = vaddq_u64(a3, vreinterpretq_u64_u8(vld1q_u8(p + i + 48)));
  }
  const uint64x2_t s = vaddq_u64(vaddq_u64(a0, a1), vaddq_u64(a2, a3));
  return vgetq_lane_u64(s, 0) + vgetq_lane_u64(s, 1);
}

constexpr MatmulI8Kernel kNeonKernel = {
    .isa = CpuIsa::kNeon,
    .panel_cols = kNr,
    .offset_weights = false,
    .matmul = &MatmulNeon,
    .row_sums = nullptr,
    .stream_read = &StreamReadNeon,
};

}  // namespace

const MatmulI8Kernel* MatmulI8KernelNeon() { return &kNeonKernel; }

}  // namespace dv
