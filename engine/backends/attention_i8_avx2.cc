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

// scores[x][s] = q[x] . k[s] for kQueries queries (1, or a pair sharing the KV head) in one pass
// over K: each K vector is loaded and widened once for every query's vpmaddwd, and K is
// prefetched `pf` bytes ahead, into L2, as the AVX-512 kernel does.
template <size_t kQueries>
void Scores(const int8_t* const* q, const int8_t* k, int64_t n_slots, int64_t d4, int64_t pf,
            int32_t* const* scores) {
  for (int64_t block = 0; block * 16 < n_slots; ++block) {
    const int8_t* kb = k + block * 16 * d4;
    __m256i acc[kQueries][4];
    for (size_t x = 0; x < kQueries; ++x) {
      for (size_t i = 0; i < 4; ++i) acc[x][i] = _mm256_setzero_si256();
    }
    for (int64_t g = 0; g < d4 / 4; ++g) {
      const int8_t* kg = kb + g * 64;
      if (pf > 0) _mm_prefetch(reinterpret_cast<const char*>(kg + pf), _MM_HINT_T1);
      __m256i qg[kQueries];
      for (size_t x = 0; x < kQueries; ++x) {
        qg[x] = _mm256_cvtepi8_epi16(_mm_set1_epi32(Load4(q[x] + 4 * g)));
      }
#pragma GCC unroll 4
      for (size_t i = 0; i < 4; ++i) {
        const __m256i kk =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kg + 16 * i)));
#pragma GCC unroll 2
        for (size_t x = 0; x < kQueries; ++x) {
          acc[x][i] = _mm256_add_epi32(acc[x][i], _mm256_madd_epi16(kk, qg[x]));
        }
      }
    }
    const int64_t first = block * 16;
    const int64_t count = n_slots - first < 16 ? n_slots - first : 16;
    for (size_t x = 0; x < kQueries; ++x) {
      alignas(32) int32_t out[16];
      _mm256_store_si256(reinterpret_cast<__m256i*>(out), PairSums(acc[x][0], acc[x][1]));
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8), PairSums(acc[x][2], acc[x][3]));
      for (int64_t s = 0; s < count; ++s) scores[x][first + s] = out[s];
    }
  }
}

void ScoresAvx2(const int8_t* q8, const int8_t* k, int64_t n_slots, int64_t d4, int32_t* scores) {
  Scores<1>(&q8, k, n_slots, d4, 0, &scores);
}

void ScoresPairAvx2(const int8_t* qa, const int8_t* qb, const int8_t* k, int64_t n_slots,
                    int64_t d4, int64_t pf, int32_t* scores_a, int32_t* scores_b) {
  const int8_t* q[2] = {qa, qb};
  int32_t* scores[2] = {scores_a, scores_b};
  Scores<2>(q, k, n_slots, d4, pf, scores);
}

// (p[first .. first+3]) as int16, zero past n_slots, repeated across the register.
inline __m256i ProbQuad(const int32_t* p, int64_t first, int64_t n_slots) {
  alignas(16) int32_t p4[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < 4 && first + i < n_slots; ++i) p4[i] = p[first + i];
  const __m128i p32 = _mm_load_si128(reinterpret_cast<const __m128i*>(p4));
  return _mm256_broadcastq_epi64(_mm_packs_epi32(p32, p32));  // p <= 2^14 fits int16
}

// The context (one query, or a pair sharing the KV head) in chunks of kContextChunk slots: each
// chunk once per 16-channel pass (4 accumulators per query), the sums kept in acc between
// chunks, so V streams from memory once, a whole 4-slot row at a time (with a prefetch distance,
// the first pass prefetches all of it), and the later passes find the chunk's rows in L1 (32
// slots of a 128-channel head: 16 KiB). One pass per 16 channels over all slots, as this kernel
// ran before, read one line of every eight at a time.
constexpr int64_t kContextChunk = 32;
constexpr int64_t kContextPasses = 64;  // 1,024 channels' accumulators at a time

// One pass: channels [j0, j0 + 4 * kGroups) of the slot quads [0, quads) of a chunk starting at
// row v, for kQueries (1 or 2) queries with their probabilities p[query][quad] (ProbQuad), added
// to acc ([query][group] x 8 lanes).
template <int kGroups, int kQueries>
void ContextPass(const __m256i (*p)[kContextChunk / 4], const int8_t* v, int64_t quads, int64_t d4,
                 int64_t j0, int64_t pf, int32_t* acc) {
  constexpr size_t kG = kGroups, kQ = kQueries;
  __m256i sum[kQ][kG];
#pragma GCC unroll 4
  for (size_t i = 0; i < kG; ++i) {
#pragma GCC unroll 2
    for (size_t x = 0; x < kQ; ++x) {
      sum[x][i] = _mm256_load_si256(reinterpret_cast<const __m256i*>(acc + 32 * x + 8 * i));
    }
  }
  const int64_t row_bytes = 4 * d4;
  for (int64_t q = 0; q < quads; ++q) {
    const int8_t* row = v + q * row_bytes;
    if (pf > 0) {
      for (int64_t line = 0; line < row_bytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(row + pf + line), _MM_HINT_T1);
      }
    }
    const int8_t* vg = row + 4 * j0;
#pragma GCC unroll 4
    for (size_t i = 0; i < kG; ++i) {
      const __m256i vv =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(vg + 16 * i)));
#pragma GCC unroll 2
      for (size_t x = 0; x < kQ; ++x) {
        sum[x][i] = _mm256_add_epi32(sum[x][i], _mm256_madd_epi16(vv, p[x][q]));
      }
    }
  }
#pragma GCC unroll 4
  for (size_t i = 0; i < kG; ++i) {
#pragma GCC unroll 2
    for (size_t x = 0; x < kQ; ++x) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(acc + 32 * x + 8 * i), sum[x][i]);
    }
  }
}

// Channels [c0, c0 + 16 * passes) of the contexts of kQueries queries (probabilities p[query],
// results ctx[query]), passes <= kContextPasses.
template <int kQueries>
void ContextChannels(const int32_t* const* p, const int8_t* v, int64_t n_slots, int64_t d,
                     int64_t d4, int64_t c0, int64_t passes, int64_t pf, int64_t* const* ctx) {
  alignas(32) int32_t acc[kContextPasses][8 * 8];  // per pass: [query][group] x 8 int32 lanes
  __builtin_memset(acc, 0, static_cast<size_t>(passes) * sizeof(acc[0]));
  constexpr decltype(&ContextPass<1, kQueries>) kByGroups[] = {
      &ContextPass<1, kQueries>, &ContextPass<2, kQueries>, &ContextPass<3, kQueries>,
      &ContextPass<4, kQueries>};
  for (int64_t first = 0; first < n_slots; first += kContextChunk) {
    const int64_t quads =
        ((first + kContextChunk < n_slots ? kContextChunk : n_slots - first) + 3) / 4;
    __m256i probs[static_cast<size_t>(kQueries)][kContextChunk / 4];
    for (int x = 0; x < kQueries; ++x) {
      for (int64_t q = 0; q < quads; ++q) probs[x][q] = ProbQuad(p[x], first + 4 * q, n_slots);
    }
    for (int64_t pass = 0; pass < passes; ++pass) {
      const int64_t j0 = c0 + 16 * pass;
      const int64_t groups = (d4 - j0 < 16 ? d4 - j0 : 16) / 4;  // 4 channels x 4 slots each
      kByGroups[groups - 1](probs, v + first * d4, quads, d4, j0, pass == 0 ? pf : 0, acc[pass]);
    }
  }
  for (int64_t pass = 0; pass < passes; ++pass) {
    const int64_t j0 = c0 + 16 * pass;
    for (int x = 0; x < kQueries; ++x) {
      const auto* s = reinterpret_cast<const __m256i*>(acc[pass] + 32 * x);
      alignas(32) int32_t out[16];
      _mm256_store_si256(reinterpret_cast<__m256i*>(out),
                         PairSums(_mm256_load_si256(s), _mm256_load_si256(s + 1)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8),
                         PairSums(_mm256_load_si256(s + 2), _mm256_load_si256(s + 3)));
      for (int64_t j = j0; j < d && j < j0 + 16; ++j) ctx[x][j] = out[j - j0];
    }
  }
}

template <int kQueries>
void Context(const int32_t* const* p, const int8_t* v, int64_t n_slots, int64_t d, int64_t d4,
             int64_t pf, int64_t* const* ctx) {
  const int64_t passes = (d4 + 15) / 16;
  for (int64_t pass = 0; pass < passes; pass += kContextPasses) {
    ContextChannels<kQueries>(p, v, n_slots, d, d4, 16 * pass,
                              passes - pass < kContextPasses ? passes - pass : kContextPasses, pf,
                              ctx);
  }
}

void ContextAvx2(const int32_t* p, const int8_t* v, int64_t n_slots, int64_t d, int64_t d4,
                 int64_t* ctx) {
  Context<1>(&p, v, n_slots, d, d4, 0, &ctx);
}

void ContextPairAvx2(const int32_t* pa, const int32_t* pb, const int8_t* v, int64_t n_slots,
                     int64_t d, int64_t d4, int64_t pf, int64_t* ctx_a, int64_t* ctx_b) {
  const int32_t* p[2] = {pa, pb};
  int64_t* ctx[2] = {ctx_a, ctx_b};
  Context<2>(p, v, n_slots, d, d4, pf, ctx);
}

constexpr AttentionI8Kernel kAvx2Kernel = {
    .isa = CpuIsa::kAvx2,
    .scores = &ScoresAvx2,
    .context = &ContextAvx2,
    .scores_pair = &ScoresPairAvx2,
    .context_pair = &ContextPairAvx2,
};

}  // namespace

const AttentionI8Kernel* AttentionI8KernelAvx2() { return &kAvx2Kernel; }

}  // namespace dv
