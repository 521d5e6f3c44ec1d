// The small-batch GEMM with AVX-512 F: 16 fp32 lanes (compiled with -mavx512f).
#include <immintrin.h>

#include <cstddef>

#include "float_engine/small_gemm_kernels.h"

namespace dv::small_gemm {
namespace {

// The 16 lanes added in one fixed tree, written out rather than _mm512_reduce_add_ps (whose
// order is the compiler's): (l_i + l_{i+8}), then (t_i + t_{i+4}), (q0+q2, q1+q3), h0 + h1 -- the
// AVX2 file's tree after one more halving.
inline float ReduceAdd(__m512 v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 t = _mm256_add_ps(lo, hi);
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  const __m128 h = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
}

// One pair of weight rows (a, b; b null for a lone last row) against MR rows of x: 2 * MR
// vector accumulators, each weight vector loaded once for all MR rows.
template <size_t MR>
void Pair(const float* x, int64_t ldx, int64_t k, const float* a, const float* b, float* ya,
          float* yb, int64_t ldy, const float* next) {
  __m512 acc_a[MR], acc_b[MR];
  for (size_t r = 0; r < MR; ++r) acc_a[r] = acc_b[r] = _mm512_setzero_ps();
  const float* bb = b != nullptr ? b : a;
  const int64_t kv = k / 16 * 16;
  for (int64_t i = 0; i < kv; i += 16) {
    if (next != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(next + i), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(next + k + i), _MM_HINT_T1);
    }
    const __m512 wa = _mm512_loadu_ps(a + i), wb = _mm512_loadu_ps(bb + i);
    for (size_t r = 0; r < MR; ++r) {
      const __m512 xv = _mm512_loadu_ps(x + static_cast<int64_t>(r) * ldx + i);
      acc_a[r] = _mm512_fmadd_ps(xv, wa, acc_a[r]);
      acc_b[r] = _mm512_fmadd_ps(xv, wb, acc_b[r]);
    }
  }
  if (kv < k) {
    const auto tail = static_cast<__mmask16>((1u << (k - kv)) - 1u);
    const __m512 wa = _mm512_maskz_loadu_ps(tail, a + kv);
    const __m512 wb = _mm512_maskz_loadu_ps(tail, bb + kv);
    for (size_t r = 0; r < MR; ++r) {
      const __m512 xv = _mm512_maskz_loadu_ps(tail, x + static_cast<int64_t>(r) * ldx + kv);
      acc_a[r] = _mm512_fmadd_ps(xv, wa, acc_a[r]);
      acc_b[r] = _mm512_fmadd_ps(xv, wb, acc_b[r]);
    }
  }
  for (size_t r = 0; r < MR; ++r) {
    ya[static_cast<int64_t>(r) * ldy] = ReduceAdd(acc_a[r]);
    if (yb != nullptr) yb[static_cast<int64_t>(r) * ldy] = ReduceAdd(acc_b[r]);
  }
}

using PairFn = void (*)(const float*, int64_t, int64_t, const float*, const float*, float*, float*,
                        int64_t, const float*);
// 8 rows of x per block: 16 accumulators + 2 weight vectors + one x vector of the 32 zmm.
constexpr int64_t kBlock = 8;
constexpr PairFn kPairs[kBlock] = {Pair<1>, Pair<2>, Pair<3>, Pair<4>,
                                   Pair<5>, Pair<6>, Pair<7>, Pair<8>};

}  // namespace

void RowsAvx512(const Args& g, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; j += 2) {
    const float* a = g.w + j * g.k;
    const bool two = j + 1 < j1;
    for (int64_t r0 = 0; r0 < g.m; r0 += kBlock) {
      const int64_t mr = g.m - r0 < kBlock ? g.m - r0 : kBlock;
      float* ya = g.y + r0 * g.ldy + j;
      // The first block of x rows prefetches the pair of weight rows after the next into L2
      // (measured: about 10% over the hardware's stream prefetch alone at 8 rows).
      kPairs[mr - 1](g.x + r0 * g.ldx, g.ldx, g.k, a, two ? a + g.k : nullptr, ya,
                     two ? ya + 1 : nullptr, g.ldy, r0 == 0 && j + 4 < j1 ? a + 4 * g.k : nullptr);
    }
  }
}

void VecMatAvx512(const float* p, int64_t s, const float* v, int64_t ldv, int64_t d, float* o) {
  // Up to 8 vectors of outputs (128 floats) in registers while every row of v streams by.
  constexpr int64_t kChunk = 8 * 16;
  for (int64_t c0 = 0; c0 < d; c0 += kChunk) {
    const int64_t width = d - c0 < kChunk ? d - c0 : kChunk;
    const int64_t vectors = (width + 15) / 16;
    const auto tail = static_cast<__mmask16>(width % 16 == 0 ? 0xFFFFu : (1u << (width % 16)) - 1u);
    __m512 acc[8];
    for (size_t c = 0; c < 8; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t j = 0; j < s; ++j) {
      const __m512 pj = _mm512_set1_ps(p[j]);
      const float* row = v + j * ldv + c0;
      for (int64_t c = 0; c < vectors; ++c) {
        const __mmask16 mask = c == vectors - 1 ? tail : static_cast<__mmask16>(0xFFFFu);
        const auto uc = static_cast<size_t>(c);
        acc[uc] = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(mask, row + c * 16), acc[uc]);
      }
    }
    for (int64_t c = 0; c < vectors; ++c) {
      const __mmask16 mask = c == vectors - 1 ? tail : static_cast<__mmask16>(0xFFFFu);
      _mm512_mask_storeu_ps(o + c0 + c * 16, mask, acc[static_cast<size_t>(c)]);
    }
  }
}

}  // namespace dv::small_gemm
