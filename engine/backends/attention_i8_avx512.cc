// AVX-512 VNNI attention kernels (attention_i8_cpu.h); compiled with -mavx512f/bw/vl/vnni and
// only called when CPUID reports them. Like matmul_i8_avx512.cc this file includes nothing but
// intrinsics and the kernel declarations, and every function is internal.
//
// Scores: one K block is 16 slots x 4 channels per 64 bytes, so one vpdpbusd adds 4 channels
// of q . k to 16 slots' int32 lanes. vpdpbusd wants one unsigned operand: K is flipped to
// K + 128 (xor 0x80) and 128 * sum_j q[j] is subtracted at the end, modulo 2^32 (exact: the
// true score fits int32).
// Context: probabilities (0..2^14) do not fit a byte, so p = 128 * hi + lo with hi in [0, 128]
// and lo in [0, 127], both unsigned bytes; one V group is 16 channels x 4 slots per 64 bytes,
// and ctx = 128 * sum hi * v + sum lo * v, each sum exact in int32 (|sum| <= 128 * sum p).
#include <immintrin.h>

#include "engine/backends/attention_i8_cpu.h"

namespace dv {
namespace {

inline int32_t Load4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

inline __mmask16 SlotMask(int64_t count) {
  return static_cast<__mmask16>(count >= 16 ? 0xFFFFu : (1u << count) - 1u);
}

void ScoresAvx512(const int8_t* q8, const int8_t* k, int64_t n_slots, int64_t d4, int32_t* scores) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const int64_t groups = d4 / 4;
  int32_t q_sum = 0;
  for (int64_t j = 0; j < d4; ++j) q_sum += q8[j];
  const __m512i corr = _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(q_sum) << 7));
  const int64_t blocks = (n_slots + 15) / 16;
  int64_t b = 0;
  // Two blocks at a time: independent accumulator chains hide vpdpbusd's latency.
  for (; b + 2 <= blocks; b += 2) {
    const int8_t* k0 = k + b * 16 * d4;
    const int8_t* k1 = k0 + 16 * d4;
    __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
    for (int64_t g = 0; g < groups; ++g) {
      const __m512i q = _mm512_set1_epi32(Load4(q8 + 4 * g));
      a0 = _mm512_dpbusd_epi32(a0, _mm512_xor_si512(_mm512_loadu_si512(k0 + 64 * g), flip), q);
      a1 = _mm512_dpbusd_epi32(a1, _mm512_xor_si512(_mm512_loadu_si512(k1 + 64 * g), flip), q);
    }
    _mm512_mask_storeu_epi32(scores + b * 16, SlotMask(n_slots - b * 16),
                             _mm512_sub_epi32(a0, corr));
    _mm512_mask_storeu_epi32(scores + b * 16 + 16, SlotMask(n_slots - b * 16 - 16),
                             _mm512_sub_epi32(a1, corr));
  }
  if (b < blocks) {
    const int8_t* k0 = k + b * 16 * d4;
    __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
    int64_t g = 0;
    for (; g + 2 <= groups; g += 2) {
      a0 = _mm512_dpbusd_epi32(a0, _mm512_xor_si512(_mm512_loadu_si512(k0 + 64 * g), flip),
                               _mm512_set1_epi32(Load4(q8 + 4 * g)));
      a1 = _mm512_dpbusd_epi32(a1, _mm512_xor_si512(_mm512_loadu_si512(k0 + 64 * g + 64), flip),
                               _mm512_set1_epi32(Load4(q8 + 4 * g + 4)));
    }
    if (g < groups) {
      a0 = _mm512_dpbusd_epi32(a0, _mm512_xor_si512(_mm512_loadu_si512(k0 + 64 * g), flip),
                               _mm512_set1_epi32(Load4(q8 + 4 * g)));
    }
    _mm512_mask_storeu_epi32(scores + b * 16, SlotMask(n_slots - b * 16),
                             _mm512_sub_epi32(_mm512_add_epi32(a0, a1), corr));
  }
}

// Splits p[4g .. 4g+3] (zero past n_slots) into the byte quadruples lo and hi.
inline void SplitProbs(const int32_t* p, int64_t first, int64_t n_slots, int32_t* lo, int32_t* hi) {
  __m128i v;
  if (first + 4 <= n_slots) {
    v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first));
  } else {
    v = _mm_maskz_loadu_epi32(static_cast<__mmask8>((1u << (n_slots - first)) - 1u), p + first);
  }
  // (The maskz forms narrow the same way; GCC 12's unmasked ones trip -Wmaybe-uninitialized.)
  *lo = _mm_cvtsi128_si32(_mm_maskz_cvtepi32_epi8(0xF, _mm_and_si128(v, _mm_set1_epi32(127))));
  *hi = _mm_cvtsi128_si32(_mm_maskz_cvtepi32_epi8(0xF, _mm_srli_epi32(v, 7)));
}

// Channels [j0, j0 + 16 * kBlocks) of the context; `last` masks the final 16-channel block.
template <int kBlocks>
void ContextBlocks(const int32_t* p, const int8_t* v, int64_t n_slots, int64_t d4, int64_t j0,
                   __mmask64 last, int64_t* ctx, int64_t d) {
  constexpr size_t kB = kBlocks;
  __m512i lo_acc[kB], hi_acc[kB];
#pragma GCC unroll 8
  for (size_t i = 0; i < kB; ++i) lo_acc[i] = hi_acc[i] = _mm512_setzero_si512();
  for (int64_t first = 0; first < n_slots; first += 4) {
    int32_t lo4, hi4;
    SplitProbs(p, first, n_slots, &lo4, &hi4);
    const __m512i lo = _mm512_set1_epi32(lo4), hi = _mm512_set1_epi32(hi4);
    const int8_t* vg = v + first * d4 + 4 * j0;
#pragma GCC unroll 8
    for (size_t i = 0; i < kB; ++i) {
      const __m512i vv =
          i + 1 < kB ? _mm512_loadu_si512(vg + 64 * i) : _mm512_maskz_loadu_epi8(last, vg + 64 * i);
      lo_acc[i] = _mm512_dpbusd_epi32(lo_acc[i], lo, vv);
      hi_acc[i] = _mm512_dpbusd_epi32(hi_acc[i], hi, vv);
    }
  }
#pragma GCC unroll 8
  for (size_t i = 0; i < kB; ++i) {
    // ctx = 128 * hi + lo in int64, sixteen channels per block.
    alignas(64) int32_t lo_sum[16], hi_sum[16];
    _mm512_store_si512(lo_sum, lo_acc[i]);
    _mm512_store_si512(hi_sum, hi_acc[i]);
    const int64_t j = j0 + 16 * static_cast<int64_t>(i);
    for (int64_t c = 0; c < 16 && j + c < d; ++c) {
      ctx[j + c] = int64_t{hi_sum[c]} * 128 + lo_sum[c];
    }
  }
}

void ContextAvx512(const int32_t* p, const int8_t* v, int64_t n_slots, int64_t d, int64_t d4,
                   int64_t* ctx) {
  // Up to 8 blocks of 16 channels (128 channels, 16 accumulators) per pass over the slots.
  for (int64_t j0 = 0; j0 < d4; j0 += 128) {
    const int64_t chans = d4 - j0 < 128 ? d4 - j0 : 128;  // a multiple of 4
    const int64_t blocks = (chans + 15) / 16;
    const int64_t tail_bytes = 4 * (chans - 16 * (blocks - 1));  // 16..64
    const __mmask64 last = tail_bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << tail_bytes) - 1;
    // One instance per block count (a template argument fixes the accumulators in registers).
    constexpr decltype(&ContextBlocks<1>) kByBlocks[] = {
        &ContextBlocks<1>, &ContextBlocks<2>, &ContextBlocks<3>, &ContextBlocks<4>,
        &ContextBlocks<5>, &ContextBlocks<6>, &ContextBlocks<7>, &ContextBlocks<8>};
    kByBlocks[blocks - 1](p, v, n_slots, d4, j0, last, ctx, d);
  }
}

// Two queries, one pass over K: each K vector is loaded (and flipped) once for both queries'
// vpdpbusd. One block at a time, even and odd groups in separate accumulators (four chains).
// K and V are prefetched `pf` bytes ahead of the loads, into L2: at a 4,096-token context batch-8
// decode reads three times as many K/V bytes as weights, and one core's hardware prefetchers
// alone stream them at about half the memory's speed (docs/RESULTS.md, "second pass").
void ScoresPairAvx512(const int8_t* qa, const int8_t* qb, const int8_t* k, int64_t n_slots,
                      int64_t d4, int64_t pf, int32_t* scores_a, int32_t* scores_b) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const int64_t groups = d4 / 4;
  int32_t sum_a = 0, sum_b = 0;
  for (int64_t j = 0; j < d4; ++j) {
    sum_a += qa[j];
    sum_b += qb[j];
  }
  const __m512i corr_a = _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(sum_a) << 7));
  const __m512i corr_b = _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(sum_b) << 7));
  const int64_t blocks = (n_slots + 15) / 16;
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* kb = k + b * 16 * d4;
    __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
    __m512i b0 = _mm512_setzero_si512(), b1 = _mm512_setzero_si512();
    int64_t g = 0;
    for (; g + 2 <= groups; g += 2) {
      if (pf > 0) {
        _mm_prefetch(reinterpret_cast<const char*>(kb + 64 * g + pf), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(kb + 64 * g + 64 + pf), _MM_HINT_T1);
      }
      const __m512i k0 = _mm512_xor_si512(_mm512_loadu_si512(kb + 64 * g), flip);
      const __m512i k1 = _mm512_xor_si512(_mm512_loadu_si512(kb + 64 * g + 64), flip);
      a0 = _mm512_dpbusd_epi32(a0, k0, _mm512_set1_epi32(Load4(qa + 4 * g)));
      b0 = _mm512_dpbusd_epi32(b0, k0, _mm512_set1_epi32(Load4(qb + 4 * g)));
      a1 = _mm512_dpbusd_epi32(a1, k1, _mm512_set1_epi32(Load4(qa + 4 * g + 4)));
      b1 = _mm512_dpbusd_epi32(b1, k1, _mm512_set1_epi32(Load4(qb + 4 * g + 4)));
    }
    if (g < groups) {
      const __m512i k0 = _mm512_xor_si512(_mm512_loadu_si512(kb + 64 * g), flip);
      a0 = _mm512_dpbusd_epi32(a0, k0, _mm512_set1_epi32(Load4(qa + 4 * g)));
      b0 = _mm512_dpbusd_epi32(b0, k0, _mm512_set1_epi32(Load4(qb + 4 * g)));
    }
    const __mmask16 mask = SlotMask(n_slots - b * 16);
    _mm512_mask_storeu_epi32(scores_a + b * 16, mask,
                             _mm512_sub_epi32(_mm512_add_epi32(a0, a1), corr_a));
    _mm512_mask_storeu_epi32(scores_b + b * 16, mask,
                             _mm512_sub_epi32(_mm512_add_epi32(b0, b1), corr_b));
  }
}

// p[first .. first+16) (zero past n_slots) as the byte quadruples lo (p & 127) and hi (p >> 7)
// of four slot groups each.
inline void SplitProbs16(const int32_t* p, int64_t first, int64_t n_slots, uint8_t* lo,
                         uint8_t* hi) {
  const __m512i v = _mm512_maskz_loadu_epi32(SlotMask(n_slots - first), p + first);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lo),
                   _mm512_cvtepi32_epi8(_mm512_and_si512(v, _mm512_set1_epi32(127))));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(hi), _mm512_cvtepi32_epi8(_mm512_srli_epi32(v, 7)));
}

inline int32_t Load4(const uint8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// Slots [first, last_slot) of channels [j0, j0 + 16 * kBlocks) of both queries' contexts (16
// accumulators at kBlocks = 4), added to the int32 sums in acc ([lo_a, hi_a, lo_b, hi_b][block]
// x 16 lanes); `last` masks the final 16-channel block. Each V vector is loaded once for four
// vpdpbusd. With row_prefetch, each slot quad also asks for the V row bytes `pf` ahead of it,
// all of them (every channel block of this and the following passes), into L2.
template <int kBlocks>
void ContextPairBlocks(const int32_t* pa, const int32_t* pb, const int8_t* v, int64_t first_slot,
                       int64_t last_slot, int64_t n_slots, int64_t d4, int64_t j0, __mmask64 last,
                       int64_t pf, bool row_prefetch, int32_t* acc) {
  constexpr size_t kB = kBlocks;
  __m512i lo_a[kB], hi_a[kB], lo_b[kB], hi_b[kB];
#pragma GCC unroll 4
  for (size_t i = 0; i < kB; ++i) {
    lo_a[i] = _mm512_load_si512(acc + 16 * i);
    hi_a[i] = _mm512_load_si512(acc + 16 * (kB + i));
    lo_b[i] = _mm512_load_si512(acc + 16 * (2 * kB + i));
    hi_b[i] = _mm512_load_si512(acc + 16 * (3 * kB + i));
  }
  alignas(16) uint8_t la[16], ha[16], lb[16], hb[16];
  const int64_t row_bytes = 4 * d4;  // one slot quad's V row, every channel
  for (int64_t first = first_slot; first < last_slot; first += 16) {
    SplitProbs16(pa, first, n_slots, la, ha);
    SplitProbs16(pb, first, n_slots, lb, hb);
    const int64_t quads = n_slots - first >= 16 ? 4 : (n_slots - first + 3) / 4;
    for (int64_t q = 0; q < quads; ++q) {
      const __m512i pla = _mm512_set1_epi32(Load4(la + 4 * q));
      const __m512i pha = _mm512_set1_epi32(Load4(ha + 4 * q));
      const __m512i plb = _mm512_set1_epi32(Load4(lb + 4 * q));
      const __m512i phb = _mm512_set1_epi32(Load4(hb + 4 * q));
      const int8_t* row = v + (first + 4 * q) * d4;
      if (row_prefetch) {
        for (int64_t line = 0; line < row_bytes; line += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(row + pf + line), _MM_HINT_T1);
        }
      }
      const int8_t* vg = row + 4 * j0;
#pragma GCC unroll 4
      for (size_t i = 0; i < kB; ++i) {
        const __m512i vv = i + 1 < kB ? _mm512_loadu_si512(vg + 64 * i)
                                      : _mm512_maskz_loadu_epi8(last, vg + 64 * i);
        lo_a[i] = _mm512_dpbusd_epi32(lo_a[i], pla, vv);
        hi_a[i] = _mm512_dpbusd_epi32(hi_a[i], pha, vv);
        lo_b[i] = _mm512_dpbusd_epi32(lo_b[i], plb, vv);
        hi_b[i] = _mm512_dpbusd_epi32(hi_b[i], phb, vv);
      }
    }
  }
#pragma GCC unroll 4
  for (size_t i = 0; i < kB; ++i) {
    _mm512_store_si512(acc + 16 * i, lo_a[i]);
    _mm512_store_si512(acc + 16 * (kB + i), hi_a[i]);
    _mm512_store_si512(acc + 16 * (2 * kB + i), lo_b[i]);
    _mm512_store_si512(acc + 16 * (3 * kB + i), hi_b[i]);
  }
}

// ctx = 128 * hi + lo in int64 for the 16-channel block starting at channel j (below d).
inline void WidenContext(const int32_t* lo, const int32_t* hi, int64_t j, int64_t d, int64_t* out) {
  const int64_t left = d - j;
  const auto m0 = static_cast<__mmask8>(left >= 8 ? 0xFFu : (1u << left) - 1u);
  const auto m1 = static_cast<__mmask8>(left >= 16 ? 0xFFu
                                        : left > 8 ? (1u << (left - 8)) - 1u
                                                   : 0u);
  const __m512i l = _mm512_load_si512(lo), h = _mm512_load_si512(hi);
  const __m512i lo0 = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(l));
  const __m512i lo1 = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(l, 1));
  const __m512i hi0 = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(h));
  const __m512i hi1 = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(h, 1));
  _mm512_mask_storeu_epi64(out + j, m0, _mm512_add_epi64(_mm512_slli_epi64(hi0, 7), lo0));
  _mm512_mask_storeu_epi64(out + j + 8, m1, _mm512_add_epi64(_mm512_slli_epi64(hi1, 7), lo1));
}

// Slots in chunks of kContextChunk, each chunk once per 64-channel pass (16 accumulators per
// pass, saved between chunks): V streams from memory once, a whole 4-slot row at a time (the
// first pass prefetches all of it), and the later passes find the chunk's rows in cache. One
// pass per 64 channels over all slots read each row in halves, the second long after the first:
// at a 4,096-token context that kernel streamed V at 17 GB/s where the scores kernel reads K at
// 26 (this one: 24; cpu_backend_bench --benchmark_filter=AttentionPairKernelStream).
constexpr int64_t kContextChunk = 64;
constexpr int64_t kContextPassChannels = 64;
constexpr int64_t kMaxPasses = 16;  // accumulators kept for up to 1,024 channels at a time

// Channels [c0, c0 + 64 * passes) of both contexts, passes <= kMaxPasses.
void ContextPairChannels(const int32_t* pa, const int32_t* pb, const int8_t* v, int64_t n_slots,
                         int64_t d, int64_t d4, int64_t c0, int64_t passes, int64_t pf,
                         int64_t* ctx_a, int64_t* ctx_b) {
  // Per pass: [lo_a, hi_a, lo_b, hi_b] x 4 blocks x 16 int32 lanes.
  alignas(64) int32_t acc[kMaxPasses][4 * 4 * 16];
  __builtin_memset(acc, 0, static_cast<size_t>(passes) * sizeof(acc[0]));
  auto pass_blocks = [&](int64_t j0) { return ((d4 - j0 < 64 ? d4 - j0 : 64) + 15) / 16; };
  for (int64_t first = 0; first < n_slots; first += kContextChunk) {
    const int64_t chunk_end = first + kContextChunk < n_slots ? first + kContextChunk : n_slots;
    for (int64_t pass = 0; pass < passes; ++pass) {
      const int64_t j0 = c0 + pass * kContextPassChannels;
      const int64_t blocks = pass_blocks(j0);
      const int64_t chans = d4 - j0 < 64 ? d4 - j0 : 64;           // a multiple of 4
      const int64_t tail_bytes = 4 * (chans - 16 * (blocks - 1));  // 16..64
      const __mmask64 last = tail_bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << tail_bytes) - 1;
      const bool row_prefetch = pf > 0 && pass == 0;
      constexpr decltype(&ContextPairBlocks<1>) kByBlocks[] = {
          &ContextPairBlocks<1>, &ContextPairBlocks<2>, &ContextPairBlocks<3>,
          &ContextPairBlocks<4>};
      kByBlocks[blocks - 1](pa, pb, v, first, chunk_end, n_slots, d4, j0, last, pf, row_prefetch,
                            acc[pass]);
    }
  }
  for (int64_t pass = 0; pass < passes; ++pass) {
    const int64_t j0 = c0 + pass * kContextPassChannels;
    const int64_t blocks = pass_blocks(j0);
    const int32_t* a = acc[pass];
    for (int64_t i = 0; i < blocks && j0 + 16 * i < d; ++i) {
      WidenContext(a + 16 * i, a + 16 * (blocks + i), j0 + 16 * i, d, ctx_a);
      WidenContext(a + 16 * (2 * blocks + i), a + 16 * (3 * blocks + i), j0 + 16 * i, d, ctx_b);
    }
  }
}

void ContextPairAvx512(const int32_t* pa, const int32_t* pb, const int8_t* v, int64_t n_slots,
                       int64_t d, int64_t d4, int64_t pf, int64_t* ctx_a, int64_t* ctx_b) {
  const int64_t passes = (d4 + kContextPassChannels - 1) / kContextPassChannels;
  for (int64_t pass = 0; pass < passes; pass += kMaxPasses) {
    ContextPairChannels(pa, pb, v, n_slots, d, d4, pass * kContextPassChannels,
                        passes - pass < kMaxPasses ? passes - pass : kMaxPasses, pf, ctx_a, ctx_b);
  }
}

constexpr AttentionI8Kernel kAvx512Kernel = {
    .isa = CpuIsa::kAvx512Vnni,
    .scores = &ScoresAvx512,
    .context = &ContextAvx512,
    .scores_pair = &ScoresPairAvx512,
    .context_pair = &ContextPairAvx512,
};

}  // namespace

const AttentionI8Kernel* AttentionI8KernelAvx512Vnni() { return &kAvx512Kernel; }

}  // namespace dv
