// AVX2 int8 GEMM kernel (compiled with -mavx2; only called when CPUID reports AVX2).
//
// Exactness: vpmaddubsw would saturate its int16 pair sums (255 * 127 * 2 > 2^15), so it is not
// used. Weights and activations are sign-extended to int16 (vpmovsxbw) and multiplied with
// vpmaddwd, whose pair sums (at most 2 * 128 * 128 = 2^15) are formed in int32 without
// saturation; accumulation is vpaddd (wrapping, exact for the int32 result).
//
// Layout: 16-column panels of signed weights (matmul_i8_cpu.h). One 64-byte group holds
// columns 0..15 x 4 k values; each 16-byte quarter widens to 4 columns x 4 int16, and vpmaddwd
// against (a0, a1, a2, a3) leaves two partial sums per column, added pairwise at the end.
// This file includes only intrinsics and the kernel table's declaration: every function is
// internal, so nothing compiled with AVX2 can be picked by the linker for other callers.
#include <immintrin.h>

#include <cstring>

#include "engine/backends/matmul_i8_cpu.h"

namespace dv {
namespace {

constexpr int64_t kNr = 16;
constexpr int kMaxRows = 2;

inline __m256i BroadcastGroup(int32_t four_bytes) {
  return _mm256_cvtepi8_epi16(_mm_set1_epi32(four_bytes));
}

inline int32_t Load4(const int8_t* a) {
  int32_t v;
  std::memcpy(&v, a, 4);
  return v;
}

// Rows [0, kRows) of a (lda bytes apart, lda a multiple of 4) times one panel; with kPrefetch,
// each group asks for the weight bytes `pf` ahead of it (as the AVX-512 kernel does).
template <int kRows, bool kPrefetch>
void Block(const int8_t* a, int64_t lda, const int8_t* panel, int32_t* c, int64_t ldc, int64_t cols,
           int64_t pf) {
  constexpr size_t kR = kRows;
  __m256i acc[kR][4];
#pragma GCC unroll 8
  for (size_t r = 0; r < kR; ++r) {
#pragma GCC unroll 4
    for (size_t q = 0; q < 4; ++q) acc[r][q] = _mm256_setzero_si256();
  }
  // (No lambda or helper taking the accumulators by reference: GCC then keeps them in memory.)
  for (int64_t g = 0; g < lda / 4; ++g) {
    __m256i b[kR];
#pragma GCC unroll 8
    for (size_t r = 0; r < kR; ++r) {
      b[r] = BroadcastGroup(Load4(a + static_cast<int64_t>(r) * lda + 4 * g));
    }
    const int8_t* w = panel + g * kNr * 4;
    if constexpr (kPrefetch) _mm_prefetch(reinterpret_cast<const char*>(w + pf), _MM_HINT_T1);
#pragma GCC unroll 4
    for (size_t q = 0; q < 4; ++q) {
      const __m256i wq =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16 * q)));
#pragma GCC unroll 8
      for (size_t r = 0; r < kR; ++r) {
        acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(wq, b[r]));
      }
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < kR; ++r) {
    // hadd leaves [c0 c1 c4 c5 | c2 c3 c6 c7]; the qword permute restores column order.
    const __m256i lo = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xD8);
    const __m256i hi = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][2], acc[r][3]), 0xD8);
    int32_t* out = c + static_cast<int64_t>(r) * ldc;
    if (cols == kNr) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8), hi);
    } else {
      alignas(32) int32_t tmp[kNr];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), lo);
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + 8), hi);
      std::memcpy(out, tmp, static_cast<size_t>(cols) * sizeof(int32_t));
    }
  }
}

template <bool kPrefetch>
void Panels(const MatmulI8Args& args, int64_t panel_begin, int64_t panel_end) {
  const int64_t panel_bytes = args.lda * kNr;
  const int64_t pf = args.prefetch_bytes;
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const int8_t* panel = reinterpret_cast<const int8_t*>(args.panels) + p * panel_bytes;
    const int64_t col0 = p * kNr;
    const int64_t cols = args.n - col0 < kNr ? args.n - col0 : kNr;
    int64_t r = 0;
    for (; r + kMaxRows <= args.m; r += kMaxRows) {
      Block<kMaxRows, kPrefetch>(args.a + r * args.lda, args.lda, panel, args.c + r * args.n + col0,
                                 args.n, cols, pf);
    }
    if (r < args.m) {
      Block<1, kPrefetch>(args.a + r * args.lda, args.lda, panel, args.c + r * args.n + col0,
                          args.n, cols, pf);
    }
  }
}

void MatmulAvx2(const MatmulI8Args& args, int64_t panel_begin, int64_t panel_end) {
  if (args.prefetch_bytes > 0) {
    Panels<true>(args, panel_begin, panel_end);
  } else {
    Panels<false>(args, panel_begin, panel_end);
  }
}

uint64_t StreamReadAvx2(const uint8_t* p, int64_t n, int64_t pf) {
  __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
  for (int64_t i = 0; i < n; i += 64) {
    if (pf > 0) _mm_prefetch(reinterpret_cast<const char*>(p + i + pf), _MM_HINT_T1);
    a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(a0, a1));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

constexpr MatmulI8Kernel kAvx2Kernel = {
    .isa = CpuIsa::kAvx2,
    .panel_cols = kNr,
    .offset_weights = false,
    // 4 KiB ahead: on the Intel Xeon host the 1-row stream ran 22.7-25.2 -> 28.5 GMAC/s against
    // 2 KiB, the 8-row one a little faster; docs/RESULTS.md, "The Intel Xeon host without AMX".
    .prefetch_bytes = 4096,
    .matmul = &MatmulAvx2,
    .row_sums = nullptr,
    .stream_read = &StreamReadAvx2,
};

}  // namespace

const MatmulI8Kernel* MatmulI8KernelAvx2() { return &kAvx2Kernel; }

}  // namespace dv
