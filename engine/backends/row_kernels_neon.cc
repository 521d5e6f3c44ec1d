// NEON element loops of the cpu row operations (row_kernels_cpu.h), two int64 lanes at a time;
// NEON is baseline on aarch64, so the neon and neondot levels both use this table. This file
// defines the lane operations; the loops over them are row_kernels_lanes.inc, the same source as
// the AVX2 table's. Includes nothing but intrinsics and the table's declaration; every function
// is internal.
//
// NEON has no 64-bit lane multiply and no 64-bit min/max; each is built from exact pieces, so
// every lane computes the scalar formula:
//   a * b mod 2^64  = lo(a)*lo(b) + ((hi(a)*lo(b) + lo(a)*hi(b)) << 32), from umull/umlal;
//   high(a * b)     = the four 32x32 partial products and their carries;
//   |v|             = (v ^ s) - s with s the sign (sshr #63), so |INT64_MIN| = INT64_MIN;
//   max, min        = cmgt and a bit select.
// sshl/ushl take a signed count from the low byte of each lane, so every count is clamped
// first: left shifts to 64 (sshl by >= 64 gives 0, as ShiftLeftWrap), arithmetic right shifts
// to 63 (the sign fill ShiftRightArith gives for counts >= 63). Partial vectors (the last lane
// of an odd row) are loaded and stored lane by lane; lanes past the end are zero.
#include <arm_neon.h>

#include <cstdint>

#include "engine/backends/row_kernels_cpu.h"

namespace dv {
namespace {

using V = int64x2_t;
constexpr int64_t kLanes = 2;

inline uint64x2_t U(V v) { return vreinterpretq_u64_s64(v); }
inline V S(uint64x2_t v) { return vreinterpretq_s64_u64(v); }

inline V Set(int64_t v) { return vdupq_n_s64(v); }
inline V Zero() { return vdupq_n_s64(0); }
inline V And(V a, V b) { return vandq_s64(a, b); }
inline V Or(V a, V b) { return vorrq_s64(a, b); }
inline V Xor(V a, V b) { return veorq_s64(a, b); }
inline V Not(V mask) { return Xor(mask, Set(-1)); }
inline V Add(V a, V b) { return vaddq_s64(a, b); }
inline V Sub(V a, V b) { return vsubq_s64(a, b); }
inline V Gt(V a, V b) { return S(vcgtq_s64(a, b)); }  // all ones where a > b
inline V Select(V mask, V if_set, V if_clear) { return vbslq_s64(U(mask), if_set, if_clear); }
inline V Max(V a, V b) { return Select(Gt(a, b), a, b); }
inline V Min(V a, V b) { return Select(Gt(a, b), b, a); }
inline V SignOf(V v) { return vshrq_n_s64(v, 63); }
inline V Abs(V v) {
  const V s = SignOf(v);
  return Sub(Xor(v, s), s);
}
inline bool AllSet(V mask) { return vminvq_u32(vreinterpretq_u32_s64(mask)) == 0xFFFFFFFFu; }
inline V Iota() { return vcombine_s64(vcreate_s64(0), vcreate_s64(1)); }

// Lanes [0, left) set.
inline V TailMask(int64_t left) { return Gt(Set(left < kLanes ? left : kLanes), Iota()); }

inline V LoadI64(const int64_t* p, int64_t left) {
  if (left >= kLanes) return vld1q_s64(p);
  return vsetq_lane_s64(p[0], Zero(), 0);
}
inline V LoadI32(const int32_t* p, int64_t left) {
  if (left >= kLanes) return vmovl_s32(vld1_s32(p));
  return vsetq_lane_s64(p[0], Zero(), 0);
}
inline V LoadI16(const int16_t* p, int64_t left) {
  const V lo = vsetq_lane_s64(p[0], Zero(), 0);
  return left >= kLanes ? vsetq_lane_s64(p[1], lo, 1) : lo;
}
inline void StoreI64(int64_t* p, int64_t left, V v) {
  if (left >= kLanes) {
    vst1q_s64(p, v);
  } else {
    vst1q_lane_s64(p, v, 0);
  }
}
// The low 32 bits of each lane (int32(v), as the scalar casts).
inline void StoreI32(int32_t* p, int64_t left, V v) {
  const int32x2_t low = vmovn_s64(v);
  if (left >= kLanes) {
    vst1_s32(p, low);
  } else {
    vst1_lane_s32(p, low, 0);
  }
}
inline void StoreLanes(int64_t* p, V v) { vst1q_s64(p, v); }
// int32(v) of each lane, sign-extended back to 64 bits.
inline V SignExtend32(V v) { return vmovl_s32(vmovn_s64(v)); }
// Lanes already in [-128, 127]: the casts only narrow.
inline void StoreI8(int8_t* p, int64_t left, V v) {
  p[0] = static_cast<int8_t>(vgetq_lane_s64(v, 0));
  if (left >= kLanes) p[1] = static_cast<int8_t>(vgetq_lane_s64(v, 1));
}

// Counts as the scalar shifts take them (any non-negative int64; a negative one, which no caller
// passes, counts as >= 64 like the AVX2 file's unsigned counts).
inline int64_t RightCount(int64_t c) { return c < 0 || c > 63 ? 63 : c; }
inline int64_t LeftCount(int64_t c) { return c < 0 || c > 64 ? 64 : c; }
inline V ShiftRightArith(V v, int64_t count) { return vshlq_s64(v, Set(-RightCount(count))); }
// Per-lane counts in [0, 63].
inline V ShiftRightArithLanes(V v, V counts) { return vshlq_s64(v, vnegq_s64(counts)); }
inline V Shl(V v, int64_t count) { return vshlq_s64(v, Set(LeftCount(count))); }
// Per-lane counts >= 0, any size.
inline V ShlLanes(V v, V counts) { return vshlq_s64(v, Min(counts, Set(64))); }
template <int kCount>
inline V ShlImm(V v) {
  return vshlq_n_s64(v, kCount);
}
template <int kCount>
inline V SrlImm(V v) {
  return S(vshrq_n_u64(U(v), kCount));
}
// Logical right shift by a count in [0, 63].
inline V SrlCount(V v, int64_t count) { return S(vshlq_u64(U(v), Set(-count))); }

// a * b modulo 2^64.
inline V Mul(V a, V b) {
  const uint32x2_t al = vmovn_u64(U(a)), ah = vshrn_n_u64(U(a), 32);
  const uint32x2_t bl = vmovn_u64(U(b)), bh = vshrn_n_u64(U(b), 32);
  const uint64x2_t cross = vmlal_u32(vmull_u32(ah, bl), al, bh);
  return S(vaddq_u64(vmull_u32(al, bl), vshlq_n_u64(cross, 32)));
}
// a * b for lanes where both are sign-extended int32 values (one widening multiply).
inline V MulNarrow(V a, V b) { return vmull_s32(vmovn_s64(a), vmovn_s64(b)); }
// a * b modulo 2^64 for lanes with 0 <= a < 2^32.
inline V MulSmall(V a, V b) {
  const uint32x2_t al = vmovn_u64(U(a));
  const uint32x2_t bl = vmovn_u64(U(b)), bh = vshrn_n_u64(U(b), 32);
  return S(vaddq_u64(vmull_u32(al, bl), vshlq_n_u64(vmull_u32(al, bh), 32)));
}

inline int64_t ReduceMax(V v) {
  const int64_t a = vgetq_lane_s64(v, 0), b = vgetq_lane_s64(v, 1);
  return a > b ? a : b;
}
inline int64_t ReduceAdd(V v) {
  return static_cast<int64_t>(vgetq_lane_u64(U(v), 0) + vgetq_lane_u64(U(v), 1));
}

// High 64 bits of the unsigned 128-bit product a * b (b_hi = b >> 32, as the AVX2 file takes it;
// here the halves come from b itself).
inline V MulHiU64(V a, V b, V /*b_hi*/) {
  const uint32x2_t al = vmovn_u64(U(a)), ah = vshrn_n_u64(U(a), 32);
  const uint32x2_t bl = vmovn_u64(U(b)), bh = vshrn_n_u64(U(b), 32);
  const uint64x2_t lo32 = vdupq_n_u64(0xFFFFFFFFu);
  const uint64x2_t ll = vmull_u32(al, bl), lh = vmull_u32(al, bh);
  const uint64x2_t hl = vmull_u32(ah, bl), hh = vmull_u32(ah, bh);
  // a*b = hh*2^64 + (lh + hl)*2^32 + ll; the middle column sums to less than 3 * 2^32.
  const uint64x2_t mid =
      vaddq_u64(vaddq_u64(vshrq_n_u64(ll, 32), vandq_u64(lh, lo32)), vandq_u64(hl, lo32));
  return S(vaddq_u64(vaddq_u64(hh, vshrq_n_u64(lh, 32)),
                     vaddq_u64(vshrq_n_u64(hl, 32), vshrq_n_u64(mid, 32))));
}

#include "engine/backends/row_kernels_lanes.inc"

int64_t MaxAbsI32(const int32_t* x, int64_t n) {
  // |x| as unsigned 32-bit lanes (|INT32_MIN| = 2^31 is exact there), four at a time.
  uint32x4_t acc = vdupq_n_u32(0);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    acc = vmaxq_u32(acc, vreinterpretq_u32_s32(vabsq_s32(vld1q_s32(x + i))));
  uint32_t g = vmaxvq_u32(acc);
  return MaxAbsI32Tail(x, i, n, g);
}

constexpr RowKernels kNeonRowKernels = DV_ROW_KERNEL_TABLE(CpuIsa::kNeon);

}  // namespace

const RowKernels* RowKernelsNeon() { return &kNeonRowKernels; }

}  // namespace dv
