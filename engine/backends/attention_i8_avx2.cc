// AVX2 attention kernels (attention_i8_cpu.h); compiled with -mavx2 and only called when CPUID
// reports AVX2. Includes nothing but intrinsics and the kernel declarations; every function is
// internal.
//
// Exactness as in matmul_i8_avx2.cc: int8 (and the 15-bit probabilities) are widened to int16
// and multiplied with vpmaddwd, whose pair sums (<= 2 * 128 * 2^14 = 2^22) cannot saturate;
// vpmaddubsw is not used. Each int32 lane ends up with two partial sums per slot (scores) or per
// channel (context), added pairwise at the end.
#include <immintrin.h>

#include "engine/backends/attention_i8_cpu.h"

namespace dv {
namespace {

inline int32_t Load4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// hadd leaves [x0 x1 x4 x5 | x2 x3 x6 x7] of the pair sums; the qword permute restores order.
inline __m256i PairSums(__m256i a, __m256i b) {
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(a, b), 0xD8);
}

void ScoresAvx2(const int8_t* q8, const int8_t* k, int64_t n_slots, int64_t d4, int32_t* scores) {
  for (int64_t block = 0; block * 16 < n_slots; ++block) {
    const int8_t* kb = k + block * 16 * d4;
    __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                      _mm256_setzero_si256()};
    for (int64_t g = 0; g < d4 / 4; ++g) {
      const __m256i q = _mm256_cvtepi8_epi16(_mm_set1_epi32(Load4(q8 + 4 * g)));
      const int8_t* kg = kb + g * 64;
#pragma GCC unroll 8
      for (int i = 0; i < 4; ++i) {
        const __m256i kk =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kg + 16 * i)));
        acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(kk, q));
      }
    }
    alignas(32) int32_t out[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), PairSums(acc[0], acc[1]));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8), PairSums(acc[2], acc[3]));
    const int64_t first = block * 16;
    const int64_t count = n_slots - first < 16 ? n_slots - first : 16;
    for (int64_t s = 0; s < count; ++s) scores[first + s] = out[s];
  }
}

// Channels [j0, j0 + 16) of the context (the caller masks channels >= d).
void ContextChunk(const int32_t* p, const int8_t* v, int64_t n_slots, int64_t d4, int64_t j0,
                  int64_t* out16) {
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
  const int64_t chans = d4 - j0 < 16 ? d4 - j0 : 16;  // a multiple of 4
  for (int64_t first = 0; first < n_slots; first += 4) {
    alignas(16) int32_t p4[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < 4 && first + i < n_slots; ++i) p4[i] = p[first + i];
    // (p0, p1, p2, p3) as int16, repeated: p <= 2^14 fits.
    const __m128i p32 = _mm_load_si128(reinterpret_cast<const __m128i*>(p4));
    const __m256i pp = _mm256_broadcastq_epi64(_mm_packs_epi32(p32, p32));
    const int8_t* vg = v + first * d4 + 4 * j0;
    for (int64_t i = 0; i < chans / 4; ++i) {
      const __m256i vv =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(vg + 16 * i)));
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(vv, pp));
    }
  }
  alignas(32) int32_t sums[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(sums), PairSums(acc[0], acc[1]));
  _mm256_store_si256(reinterpret_cast<__m256i*>(sums + 8), PairSums(acc[2], acc[3]));
  for (int i = 0; i < 16; ++i) out16[i] = sums[i];
}

void ContextAvx2(const int32_t* p, const int8_t* v, int64_t n_slots, int64_t d, int64_t d4,
                 int64_t* ctx) {
  for (int64_t j0 = 0; j0 < d; j0 += 16) {
    int64_t chunk[16];
    ContextChunk(p, v, n_slots, d4, j0, chunk);
    for (int64_t j = j0; j < d && j < j0 + 16; ++j) ctx[j] = chunk[j - j0];
  }
}

constexpr AttentionI8Kernel kAvx2Kernel = {
    .isa = CpuIsa::kAvx2, .scores = &ScoresAvx2, .context = &ContextAvx2};

}  // namespace

const AttentionI8Kernel* AttentionI8KernelAvx2() { return &kAvx2Kernel; }

}  // namespace dv
