// The small-batch GEMM with AVX-512 F: 16 fp32 lanes (compiled with -mavx512f), four weight
// rows at a time (measured at 8 rows of x: 1.4x pairs of weight rows), three for 5-8 rows of x.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

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

// 16 weights as fp32: loaded, or (bfloat16) widened exactly -- the bits shifted into the high
// half -- so a bf16 weight gives the product its fp32 value gives. `count` < 16 loads a tail
// (the missing lanes 0).
inline __m512 LoadW(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 LoadW(const uint16_t* p) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}
inline __m512 LoadTail(const float* p, int64_t count) {
  return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1u), p);
}
inline __m512 LoadTail(const uint16_t* p, int64_t count) {
  alignas(32) uint16_t tail[16] = {};
  std::memcpy(tail, p, static_cast<size_t>(count) * sizeof(uint16_t));
  return LoadW(tail);
}

// NW weight rows (w[0..NW); a missing one points at w[0], its output null) against MR rows of
// x (packed: step s of row r at x[(s * MR + r) * 16]): NW * MR vector accumulators, each weight
// vector loaded once for all MR rows and each x vector once for all NW weight rows. Every output
// is one accumulator summed in k order and reduced by ReduceAdd, whatever NW and MR are: the
// blocking never changes a bit.
template <size_t NW, size_t MR, typename W>
void Tile(const float* x, int64_t k, const W* const* w, float* const* y, int64_t ldy,
          const W* next) {
  __m512 acc[NW][MR];
  for (size_t q = 0; q < NW; ++q)
    for (size_t r = 0; r < MR; ++r) acc[q][r] = _mm512_setzero_ps();
  const int64_t kv = k / 16 * 16;
  // One prefetch per 64-byte line of each next weight row.
  constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(W));
  constexpr auto kStep = static_cast<int64_t>(MR);
  for (int64_t i = 0; i < kv; i += 16) {
    if (next != nullptr && i % kLine == 0) {
      for (size_t q = 0; q < NW; ++q) {
        _mm_prefetch(reinterpret_cast<const char*>(next + static_cast<int64_t>(q) * k + i),
                     _MM_HINT_T1);
      }
    }
    __m512 wv[NW];
    for (size_t q = 0; q < NW; ++q) wv[q] = LoadW(w[q] + i);
    const float* xs = x + i * kStep;
    for (size_t r = 0; r < MR; ++r) {
      const __m512 xv = _mm512_load_ps(xs + 16 * r);
      for (size_t q = 0; q < NW; ++q) acc[q][r] = _mm512_fmadd_ps(xv, wv[q], acc[q][r]);
    }
  }
  if (kv < k) {
    __m512 wv[NW];
    for (size_t q = 0; q < NW; ++q) wv[q] = LoadTail(w[q] + kv, k - kv);
    const float* xs = x + kv * kStep;  // the packed tail: zeros past k
    for (size_t r = 0; r < MR; ++r) {
      const __m512 xv = _mm512_load_ps(xs + 16 * r);
      for (size_t q = 0; q < NW; ++q) acc[q][r] = _mm512_fmadd_ps(xv, wv[q], acc[q][r]);
    }
  }
  for (size_t q = 0; q < NW; ++q) {
    if (y[q] == nullptr) continue;
    for (size_t r = 0; r < MR; ++r) y[q][static_cast<int64_t>(r) * ldy] = ReduceAdd(acc[q][r]);
  }
}

// Weight rows NW at a time against blocks of up to MaxMR rows of x. The first block of x rows
// streams the weight rows from memory and prefetches the NW rows after the next NW into L2; the
// other blocks find them in cache.
template <size_t NW, size_t MaxMR, typename W, size_t... MR>
void RowsOf(const Args& g, const W* weights, int64_t j0, int64_t j1, std::index_sequence<MR...>) {
  using TileFn = void (*)(const float*, int64_t, const W* const*, float* const*, int64_t, const W*);
  constexpr TileFn kTiles[] = {Tile<NW, MR + 1, W>...};
  constexpr auto nw = static_cast<int64_t>(NW), block = static_cast<int64_t>(MaxMR);
  const int64_t block_floats = PackedBlockFloats(g.k, XLayoutAvx512(g.m));
  for (int64_t j = j0; j < j1; j += nw) {
    const W* w[NW];
    for (int64_t q = 0; q < nw; ++q) w[q] = weights + (j + q < j1 ? j + q : j) * g.k;
    for (int64_t r0 = 0; r0 < g.m; r0 += block) {
      const int64_t mr = g.m - r0 < block ? g.m - r0 : block;
      float* y[NW];
      for (int64_t q = 0; q < nw; ++q) y[q] = j + q < j1 ? g.y + r0 * g.ldy + j + q : nullptr;
      kTiles[mr - 1](g.x + r0 / block * block_floats, g.k, w, y, g.ldy,
                     r0 == 0 && j + 2 * nw < j1 ? weights + (j + 2 * nw) * g.k : nullptr);
    }
  }
}

// Four weight rows by blocks of up to 4 rows of x (16 accumulators + 4 weight vectors + one x
// vector of the 32 zmm), except for 5 to 8 rows (a batch-8 decode step): three weight rows by all
// of them (24 + 3 + 1), which streams each weight once and loads fewer vectors per FMA. Measured
// (docs/RESULTS.md, "Third pass on the Intel Xeon host"): +6-10% at 8 rows; at 16 rows
// two blocks of 8 were slower than four of 4.
bool EightRowTile(int64_t m) { return m >= 5 && m <= 8; }

template <typename W>
void Rows(const Args& g, const W* weights, int64_t j0, int64_t j1) {
  if (EightRowTile(g.m)) {
    RowsOf<3, 8>(g, weights, j0, j1, std::make_index_sequence<8>());
  } else {
    RowsOf<4, 4>(g, weights, j0, j1, std::make_index_sequence<4>());
  }
}

}  // namespace

XLayout XLayoutAvx512(int64_t m) { return {16, EightRowTile(m) ? 8 : 4}; }

void RowsAvx512(const Args& g, int64_t j0, int64_t j1) {
  if (g.wb != nullptr) {
    Rows(g, g.wb, j0, j1);
  } else {
    Rows(g, g.w, j0, j1);
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
