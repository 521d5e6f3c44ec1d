// aarch64 dot-product int8 GEMM kernel (compiled with -march=armv8.2-a+dotprod; only called when
// the OS reports FEAT_DotProd, HWCAP_ASIMDDP).
//
// Exactness: SDOT (vdotq_s32, vdotq_laneq_s32) multiplies signed bytes by signed bytes and adds
// each group of four products (|sum| <= 4 * 128 * 128 = 2^16) to an int32 lane, with no
// intermediate narrowing and no saturation. int32 sums wrap modulo 2^32 and the true result fits
// int32, so the result is exact for every int8 input, -128 included. Weights stay signed: no
// offset and no row sums.
//
// Layout: 16-column panels of signed weights (matmul_i8_cpu.h). A 16-byte quarter of a group is
// 4 columns x 4 k values, which is SDOT's operand shape: against the group's four activations it
// gives the 4 column sums directly. Activations are loaded 16 bytes (four groups) per row and
// selected by lane, so the inner loop does 4 weight loads and 4 * rows SDOTs per group; rows are
// taken four at a time (16 accumulators, 4 activation and 4 weight registers of the 32). Like the
// other per-ISA files, this one includes only intrinsics and the kernel declarations; every
// function is internal, so no Armv8.2 code can be linked in for other callers.
#include <arm_neon.h>

#include <cstring>

#include "engine/backends/matmul_i8_cpu.h"

namespace dv {
namespace {

constexpr int64_t kNr = 16;
constexpr int kMaxRows = 4;

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
  const int64_t groups = lda / 4;
  int32x4_t acc[kR][4];
#pragma GCC unroll 8
  for (size_t r = 0; r < kR; ++r) {
#pragma GCC unroll 4
    for (size_t q = 0; q < 4; ++q) acc[r][q] = vdupq_n_s32(0);
  }
  // Four groups at a time: one 16-byte load per row, each group picked by its 32-bit lane (the
  // lane of vdotq_laneq_s32 must be a constant, hence the four spelled-out steps). (One loop and
  // no helper taking the accumulators by reference: otherwise GCC keeps them in memory.)
  int64_t g = 0;
  for (; g + 4 <= groups; g += 4) {
    int8x16_t av[kR];
#pragma GCC unroll 8
    for (size_t r = 0; r < kR; ++r) av[r] = vld1q_s8(a + static_cast<int64_t>(r) * lda + 4 * g);
    const int8_t* w = panel + g * kNr * 4;
#pragma GCC unroll 4
    for (size_t q = 0; q < 4; ++q) {
      const int8x16_t w0 = vld1q_s8(w + 16 * q);
      const int8x16_t w1 = vld1q_s8(w + kNr * 4 + 16 * q);
      const int8x16_t w2 = vld1q_s8(w + kNr * 8 + 16 * q);
      const int8x16_t w3 = vld1q_s8(w + kNr * 12 + 16 * q);
#pragma GCC unroll 8
      for (size_t r = 0; r < kR; ++r) {
        acc[r][q] = vdotq_laneq_s32(acc[r][q], w0, av[r], 0);
        acc[r][q] = vdotq_laneq_s32(acc[r][q], w1, av[r], 1);
        acc[r][q] = vdotq_laneq_s32(acc[r][q], w2, av[r], 2);
        acc[r][q] = vdotq_laneq_s32(acc[r][q], w3, av[r], 3);
      }
    }
  }
  // The last groups % 4 groups: a row holds fewer than 16 bytes there, so each group's four
  // activations are broadcast instead.
  for (; g < groups; ++g) {
    int8x16_t b[kR];
#pragma GCC unroll 8
    for (size_t r = 0; r < kR; ++r)
      b[r] = BroadcastGroup(a + static_cast<int64_t>(r) * lda + 4 * g);
    const int8_t* w = panel + g * kNr * 4;
#pragma GCC unroll 4
    for (size_t q = 0; q < 4; ++q) {
      const int8x16_t wq = vld1q_s8(w + 16 * q);
#pragma GCC unroll 8
      for (size_t r = 0; r < kR; ++r) acc[r][q] = vdotq_s32(acc[r][q], wq, b[r]);
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < kR; ++r) {
    int32_t out[kNr];
#pragma GCC unroll 4
    for (size_t q = 0; q < 4; ++q) vst1q_s32(out + 4 * q, acc[r][q]);
    std::memcpy(c + static_cast<int64_t>(r) * ldc, out,
                static_cast<size_t>(cols) * sizeof(int32_t));
  }
}

void MatmulNeonDot(const MatmulI8Args& args, int64_t panel_begin, int64_t panel_end) {
  const int64_t panel_bytes = args.lda * kNr;
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const int8_t* panel = reinterpret_cast<const int8_t*>(args.panels) + p * panel_bytes;
    const int64_t col0 = p * kNr;
    const int64_t cols = args.n - col0 < kNr ? args.n - col0 : kNr;
    const int64_t lda = args.lda;
    int64_t r = 0;
    for (; r + kMaxRows <= args.m; r += kMaxRows) {
      Block<kMaxRows>(args.a + r * lda, lda, panel, args.c + r * args.n + col0, args.n, cols);
    }
    const int8_t* a = args.a + r * lda;
    int32_t* c = args.c + r * args.n + col0;
    switch (args.m - r) {
      case 3:
        Block<3>(a, lda, panel, c, args.n, cols);
        break;
      case 2:
        Block<2>(a, lda, panel, c, args.n, cols);
        break;
      case 1:
        Block<1>(a, lda, panel, c, args.n, cols);
        break;
      default:
        break;
    }
  }
}

uint64_t StreamReadNeonDot(const uint8_t* p, int64_t n, int64_t) {
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

constexpr MatmulI8Kernel kNeonDotKernel = {
    .isa = CpuIsa::kNeonDot,
    .panel_cols = kNr,
    .offset_weights = false,
    .matmul = &MatmulNeonDot,
    .row_sums = nullptr,
    .stream_read = &StreamReadNeonDot,
};

}  // namespace

const MatmulI8Kernel* MatmulI8KernelNeonDot() { return &kNeonDotKernel; }

}  // namespace dv
