// The small-batch GEMM with AVX2 + FMA: 8 fp32 lanes (compiled with -mavx2 -mfma).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "float_engine/small_gemm_kernels.h"

namespace dv::small_gemm {
namespace {

// The 8 lanes added in one fixed tree: (l0+l4, l1+l5, l2+l6, l3+l7), then pairs, then the two.
inline float ReduceAdd(__m256 v) {
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 h = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
}

// 8 weights as fp32: loaded, or (bfloat16) widened exactly -- the bits shifted into the high
// half. The tails load `count` < 8 values, the missing lanes 0.
inline __m256 LoadW(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 LoadW(const uint16_t* p) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}
inline __m256i TailMask(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline __m256 LoadTail(const float* p, int64_t count) {
  return _mm256_maskload_ps(p, TailMask(count));
}
inline __m256 LoadTail(const uint16_t* p, int64_t count) {
  alignas(16) uint16_t tail[8] = {};
  std::memcpy(tail, p, static_cast<size_t>(count) * sizeof(uint16_t));
  return LoadW(tail);
}

// One pair of weight rows (a, b; b null for a lone last row) against MR rows of x (packed: step
// s of row r at x[(s * MR + r) * 8]): 2 * MR vector accumulators, each weight vector loaded once
// for all MR rows.
template <size_t MR, typename W>
void Pair(const float* x, int64_t k, const W* a, const W* b, float* ya, float* yb, int64_t ldy,
          const W* next) {
  __m256 acc_a[MR], acc_b[MR];
  for (size_t r = 0; r < MR; ++r) acc_a[r] = acc_b[r] = _mm256_setzero_ps();
  const W* bb = b != nullptr ? b : a;
  const int64_t kv = k / 8 * 8;
  // One prefetch per 64-byte line of each next weight row.
  constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(W));
  constexpr auto kStep = static_cast<int64_t>(MR);
  for (int64_t i = 0; i < kv; i += 8) {
    if (next != nullptr && i % kLine == 0) {
      _mm_prefetch(reinterpret_cast<const char*>(next + i), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(next + k + i), _MM_HINT_T1);
    }
    const __m256 wa = LoadW(a + i), wb = LoadW(bb + i);
    const float* xs = x + i * kStep;
    for (size_t r = 0; r < MR; ++r) {
      const __m256 xv = _mm256_load_ps(xs + 8 * r);
      acc_a[r] = _mm256_fmadd_ps(xv, wa, acc_a[r]);
      acc_b[r] = _mm256_fmadd_ps(xv, wb, acc_b[r]);
    }
  }
  if (kv < k) {
    const __m256 wa = LoadTail(a + kv, k - kv), wb = LoadTail(bb + kv, k - kv);
    const float* xs = x + kv * kStep;  // the packed tail: zeros past k
    for (size_t r = 0; r < MR; ++r) {
      const __m256 xv = _mm256_load_ps(xs + 8 * r);
      acc_a[r] = _mm256_fmadd_ps(xv, wa, acc_a[r]);
      acc_b[r] = _mm256_fmadd_ps(xv, wb, acc_b[r]);
    }
  }
  for (size_t r = 0; r < MR; ++r) {
    ya[static_cast<int64_t>(r) * ldy] = ReduceAdd(acc_a[r]);
    if (yb != nullptr) yb[static_cast<int64_t>(r) * ldy] = ReduceAdd(acc_b[r]);
  }
}

// 4 rows of x per block: 8 accumulators + 2 weight vectors + one x vector of the 16 ymm.
constexpr int64_t kBlock = 4;

template <typename W>
void Rows(const Args& g, const W* weights, int64_t j0, int64_t j1) {
  using PairFn =
      void (*)(const float*, int64_t, const W*, const W*, float*, float*, int64_t, const W*);
  constexpr PairFn kPairs[kBlock] = {Pair<1, W>, Pair<2, W>, Pair<3, W>, Pair<4, W>};
  const int64_t block_floats = PackedBlockFloats(g.k, XLayoutAvx2(g.m));
  for (int64_t j = j0; j < j1; j += 2) {
    const W* a = weights + j * g.k;
    const bool two = j + 1 < j1;
    for (int64_t r0 = 0; r0 < g.m; r0 += kBlock) {
      const int64_t mr = g.m - r0 < kBlock ? g.m - r0 : kBlock;
      float* ya = g.y + r0 * g.ldy + j;
      // The first block of x rows prefetches the pair of weight rows after the next into L2, as
      // the AVX-512 file does (where it measured about 10% at 8 rows; docs/RESULTS.md).
      kPairs[mr - 1](g.x + r0 / kBlock * block_floats, g.k, a, two ? a + g.k : nullptr, ya,
                     two ? ya + 1 : nullptr, g.ldy, r0 == 0 && j + 4 < j1 ? a + 4 * g.k : nullptr);
    }
  }
}

}  // namespace

XLayout XLayoutAvx2(int64_t) { return {8, kBlock}; }

void RowsAvx2(const Args& g, int64_t j0, int64_t j1) {
  if (g.wb != nullptr) {
    Rows(g, g.wb, j0, j1);
  } else {
    Rows(g, g.w, j0, j1);
  }
}

void VecMatAvx2(const float* p, int64_t s, const float* v, int64_t ldv, int64_t d, float* o) {
  // Up to 8 vectors of outputs (64 floats) in registers while every row of v streams by.
  constexpr int64_t kChunk = 8 * 8;
  for (int64_t c0 = 0; c0 < d; c0 += kChunk) {
    const int64_t width = d - c0 < kChunk ? d - c0 : kChunk;
    const int64_t vectors = (width + 7) / 8;
    const __m256i tail =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(width % 8 == 0 ? 8 : width % 8)),
                           _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i all = _mm256_set1_epi32(-1);
    __m256 acc[8];
    for (size_t c = 0; c < 8; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t j = 0; j < s; ++j) {
      const __m256 pj = _mm256_set1_ps(p[j]);
      const float* row = v + j * ldv + c0;
      for (int64_t c = 0; c < vectors; ++c) {
        const __m256i mask = c == vectors - 1 ? tail : all;
        const auto uc = static_cast<size_t>(c);
        acc[uc] = _mm256_fmadd_ps(pj, _mm256_maskload_ps(row + c * 8, mask), acc[uc]);
      }
    }
    for (int64_t c = 0; c < vectors; ++c) {
      _mm256_maskstore_ps(o + c0 + c * 8, c == vectors - 1 ? tail : all,
                          acc[static_cast<size_t>(c)]);
    }
  }
}

}  // namespace dv::small_gemm
