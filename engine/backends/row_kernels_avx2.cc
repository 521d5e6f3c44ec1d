// AVX2 element loops of the cpu row operations (row_kernels_cpu.h), four int64 lanes at a time;
// compiled with -mavx2 and only called when CPUID reports it. This file defines the lane
// operations; the loops over them are row_kernels_lanes.inc, shared with the NEON file. Includes
// nothing but intrinsics and the table's declaration; every function is internal.
//
// AVX2 has no 64-bit lane multiply, arithmetic right shift, absolute value, min/max or unsigned
// compare; each is built here from exact pieces, so every lane still computes the scalar formula:
//   a * b mod 2^64    = lo(a)*lo(b) + ((hi(a)*lo(b) + lo(a)*hi(b)) << 32), three vpmuludq;
//   v >> c (signed)   = ((v ^ s) >>> c) ^ s with s = v < 0 ? ~0 : 0, where vpsrlq's counts >= 64
//                       give 0 and so the sign fill ShiftRightArith gives;
//   |v|               = (v ^ s) - s, so |INT64_MIN| = INT64_MIN as WrapAbs;
//   max, min          = vpcmpgtq and a blend; unsigned a <= b = signed compare of a ^ 2^63.
// Left shifts are vpsllq/vpsllvq (counts >= 64 give 0, as ShiftLeftWrap). Divisions by the row's
// divisor use RowDivisor's multiply-shift with the high 64 bits of the product from four
// vpmuludq; a lane whose dividend leaves [0, 2^63) stops the loop and the caller finishes the row
// with the scalar loop. Partial vectors are loaded and stored with vpmaskmov; lanes past the end
// are zero, and every reduction and check masks them out.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/backends/row_kernels_cpu.h"

namespace dv {
namespace {

using V = __m256i;
constexpr int64_t kLanes = 4;

inline V Set(int64_t v) { return _mm256_set1_epi64x(v); }
inline V Zero() { return _mm256_setzero_si256(); }
inline V And(V a, V b) { return _mm256_and_si256(a, b); }
inline V Or(V a, V b) { return _mm256_or_si256(a, b); }
inline V Xor(V a, V b) { return _mm256_xor_si256(a, b); }
inline V Add(V a, V b) { return _mm256_add_epi64(a, b); }
inline V Sub(V a, V b) { return _mm256_sub_epi64(a, b); }
inline V Gt(V a, V b) { return _mm256_cmpgt_epi64(a, b); }  // all ones where a > b
inline V Select(V mask, V if_set, V if_clear) { return _mm256_blendv_epi8(if_clear, if_set, mask); }
inline V Max(V a, V b) { return Select(Gt(a, b), a, b); }
inline V Min(V a, V b) { return Select(Gt(a, b), b, a); }
inline V SignOf(V v) { return Gt(Zero(), v); }
inline V Abs(V v) {
  const V s = SignOf(v);
  return Sub(Xor(v, s), s);
}
inline bool AllSet(V mask) { return _mm256_movemask_epi8(mask) == -1; }
inline V Not(V mask) { return Xor(mask, Set(-1)); }
inline V Iota() { return _mm256_set_epi64x(3, 2, 1, 0); }

// Lanes [0, left) set: the mask of a vector that starts `left` elements before the row's end.
inline V TailMask(int64_t left) { return Gt(Set(left < kLanes ? left : kLanes), Iota()); }
inline __m128i TailMask32(int64_t left) {
  return _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(left < kLanes ? left : kLanes)),
                         _mm_set_epi32(3, 2, 1, 0));
}

inline V LoadI64(const int64_t* p, int64_t left) {
  if (left >= kLanes) return _mm256_loadu_si256(reinterpret_cast<const V*>(p));
  return _mm256_maskload_epi64(reinterpret_cast<const long long*>(p), TailMask(left));
}
inline V LoadI32(const int32_t* p, int64_t left) {
  if (left >= kLanes)
    return _mm256_cvtepi32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_cvtepi32_epi64(_mm_maskload_epi32(p, TailMask32(left)));
}
inline V LoadI16(const int16_t* p, int64_t left) {
  if (left >= kLanes)
    return _mm256_cvtepi16_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  int16_t lanes[kLanes] = {0, 0, 0, 0};
  std::memcpy(lanes, p, static_cast<size_t>(left < kLanes ? left : kLanes) * sizeof(int16_t));
  return _mm256_cvtepi16_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(lanes)));
}
inline void StoreI64(int64_t* p, int64_t left, V v) {
  if (left >= kLanes) {
    _mm256_storeu_si256(reinterpret_cast<V*>(p), v);
  } else {
    _mm256_maskstore_epi64(reinterpret_cast<long long*>(p), TailMask(left), v);
  }
}
// The low 32 bits of each lane (int32(v), as the scalar casts).
inline __m128i Low32(V v) {
  return _mm256_castsi256_si128(
      _mm256_permutevar8x32_epi32(v, _mm256_set_epi32(7, 5, 3, 1, 6, 4, 2, 0)));
}
inline void StoreI32(int32_t* p, int64_t left, V v) {
  if (left >= kLanes) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), Low32(v));
  } else {
    _mm_maskstore_epi32(p, TailMask32(left), Low32(v));
  }
}
inline void StoreLanes(int64_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<V*>(p), v); }
// int32(v) of each lane, sign-extended back to 64 bits.
inline V SignExtend32(V v) { return _mm256_cvtepi32_epi64(Low32(v)); }
// Lanes already in [-128, 127]: the packs cannot saturate, they only narrow.
inline void StoreI8(int8_t* p, int64_t left, V v) {
  const __m128i w32 = Low32(v);
  const __m128i w8 = _mm_packs_epi16(_mm_packs_epi32(w32, w32), _mm_setzero_si128());
  const auto bytes = static_cast<uint32_t>(_mm_cvtsi128_si32(w8));
  std::memcpy(p, &bytes, static_cast<size_t>(left < kLanes ? left : kLanes));
}

inline __m128i Count(int64_t c) { return _mm_cvtsi64_si128(c); }
// vpsrlq/vpsllq take the whole 64-bit count: >= 64 (or "negative") gives 0.
inline V ShiftRightArith(V v, int64_t count) {
  const V s = SignOf(v);
  return Xor(_mm256_srl_epi64(Xor(v, s), Count(count)), s);
}
inline V ShiftRightArithLanes(V v, V counts) {
  const V s = SignOf(v);
  return Xor(_mm256_srlv_epi64(Xor(v, s), counts), s);
}
inline V Shl(V v, int64_t count) { return _mm256_sll_epi64(v, Count(count)); }
inline V ShlLanes(V v, V counts) { return _mm256_sllv_epi64(v, counts); }
template <int kCount>
inline V ShlImm(V v) {
  return _mm256_slli_epi64(v, kCount);
}
template <int kCount>
inline V SrlImm(V v) {
  return _mm256_srli_epi64(v, kCount);
}
inline V SrlCount(V v, int64_t count) { return _mm256_srl_epi64(v, Count(count)); }

// a * b modulo 2^64.
inline V Mul(V a, V b) {
  const V cross = Add(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                      _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
  return Add(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
}
// a * b for lanes where both are sign-extended int32 values (vpmuldq: one multiply).
inline V MulNarrow(V a, V b) { return _mm256_mul_epi32(a, b); }
// a * b modulo 2^64 for lanes with 0 <= a < 2^32.
inline V MulSmall(V a, V b) {
  return Add(_mm256_mul_epu32(a, b),
             _mm256_slli_epi64(_mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)), 32));
}

inline int64_t ReduceMax(V v) {
  alignas(32) int64_t lanes[kLanes];
  _mm256_store_si256(reinterpret_cast<V*>(lanes), v);
  int64_t m = lanes[0];
  for (int i = 1; i < kLanes; ++i) m = lanes[i] > m ? lanes[i] : m;
  return m;
}
inline int64_t ReduceAdd(V v) {
  alignas(32) uint64_t lanes[kLanes];
  _mm256_store_si256(reinterpret_cast<V*>(lanes), v);
  uint64_t s = 0;
  for (uint64_t lane : lanes) s += lane;
  return static_cast<int64_t>(s);
}

// High 64 bits of the unsigned 128-bit product a * b (b_hi = b >> 32).
inline V MulHiU64(V a, V b, V b_hi) {
  const V lo32 = Set(0xFFFFFFFF);
  const V a_hi = _mm256_srli_epi64(a, 32);
  const V ll = _mm256_mul_epu32(a, b);
  const V lh = _mm256_mul_epu32(a, b_hi);
  const V hl = _mm256_mul_epu32(a_hi, b);
  const V hh = _mm256_mul_epu32(a_hi, b_hi);
  // a*b = hh*2^64 + (lh + hl)*2^32 + ll; the middle column sums to less than 3 * 2^32.
  const V mid = Add(Add(_mm256_srli_epi64(ll, 32), And(lh, lo32)), And(hl, lo32));
  return Add(Add(hh, _mm256_srli_epi64(lh, 32)),
             Add(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(mid, 32)));
}

#include "engine/backends/row_kernels_lanes.inc"

int64_t MaxAbsI32(const int32_t* x, int64_t n) {
  // |x| as unsigned 32-bit lanes (|INT32_MIN| = 2^31 is exact there), eight at a time.
  V acc = Zero();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    acc = _mm256_max_epu32(acc,
                           _mm256_abs_epi32(_mm256_loadu_si256(reinterpret_cast<const V*>(x + i))));
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<V*>(lanes), acc);
  uint32_t g = 0;
  for (uint32_t lane : lanes) g = lane > g ? lane : g;
  return MaxAbsI32Tail(x, i, n, g);
}

constexpr RowKernels kAvx2RowKernels = DV_ROW_KERNEL_TABLE(CpuIsa::kAvx2);

}  // namespace

const RowKernels* RowKernelsAvx2() { return &kAvx2RowKernels; }

}  // namespace dv
