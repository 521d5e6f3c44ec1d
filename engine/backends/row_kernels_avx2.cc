// AVX2 element loops of the cpu row operations (row_kernels_cpu.h), four int64 lanes at a time;
// compiled with -mavx2 and only called when CPUID reports it. Includes nothing but intrinsics
// and the table's declaration; every function is internal.
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

// Lanes [0, left) set: the mask of a vector that starts `left` elements before the row's end.
inline V TailMask(int64_t left) {
  return Gt(Set(left < kLanes ? left : kLanes), _mm256_set_epi64x(3, 2, 1, 0));
}
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
// Lanes already in [-128, 127]: the packs cannot saturate, they only narrow.
inline void StoreI8(int8_t* p, int64_t left, V v) {
  const __m128i w32 = Low32(v);
  const __m128i w8 = _mm_packs_epi16(_mm_packs_epi32(w32, w32), _mm_setzero_si128());
  const auto bytes = static_cast<uint32_t>(_mm_cvtsi128_si32(w8));
  std::memcpy(p, &bytes, static_cast<size_t>(left < kLanes ? left : kLanes));
}

inline __m128i Count(int64_t c) { return _mm_cvtsi64_si128(c); }
inline V ShiftRightArith(V v, __m128i count) {
  const V s = SignOf(v);
  return Xor(_mm256_srl_epi64(Xor(v, s), count), s);
}
inline V ShiftRightArithLanes(V v, V counts) {
  const V s = SignOf(v);
  return Xor(_mm256_srlv_epi64(Xor(v, s), counts), s);
}
inline V Rsr(V v, RoundShift sh) {
  return ShiftRightArith(Add(v, Set(sh.addend)), Count(sh.count));
}
inline V Shl(V v, int64_t count) { return _mm256_sll_epi64(v, Count(count)); }

// a * b modulo 2^64.
inline V Mul(V a, V b) {
  const V cross = Add(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                      _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
  return Add(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
}
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

class VecDivisor {
 public:
  explicit VecDivisor(const RowDivisorParams& p)
      : magic_(Set(static_cast<int64_t>(p.magic))),
        magic_hi_(Set(static_cast<int64_t>(p.magic >> 32))),
        half_(Set(static_cast<int64_t>(p.divisor >> 1))),
        shift_(Count(p.shift)),
        unit_(p.magic == 0) {}

  // floor(n / d) for lanes with 0 <= n < 2^63.
  V Quotient(V n) const {
    return unit_ ? n : _mm256_srl_epi64(MulHiU64(n, magic_, magic_hi_), shift_);
  }

  // rhad(a, d) = sign(a) * floor((|a| + d/2) / d); *ok marks the lanes whose |a| + d/2 is in
  // [0, 2^63) (the others are not valid results).
  V RoundHalfAway(V a, V* ok) const {
    const V negative = SignOf(a);
    const V num = Add(Abs(a), half_);
    *ok = Gt(num, Set(-1));
    const V q = Quotient(num);
    return Sub(Xor(q, negative), negative);  // -q where a < 0
  }

 private:
  V magic_, magic_hi_, half_;
  __m128i shift_;
  bool unit_;
};

inline V SaturateI8(V v) { return Min(Max(v, Set(-128)), Set(127)); }

// DI-Exp of -ax for lanes with 0 <= ax < 2^63: q = floor(ax / tpos), r = q * tpos - ax, and
// ((r >> 1) + tpos) >> min(q, 62).
inline V DiExpOfNegative(V ax, V tpos, const VecDivisor& div) {
  const V q = div.Quotient(ax);
  const V r = Sub(Mul(q, tpos), ax);
  const V u = Add(ShiftRightArith(r, Count(1)), tpos);
  return ShiftRightArithLanes(u, Min(q, Set(62)));
}

int64_t MaxAbsI64(const int64_t* x, int64_t n) {
  V acc = Set(1);
  for (int64_t i = 0; i < n; i += kLanes) {
    acc = Max(acc, Abs(LoadI64(x + i, n - i)));  // lanes past the end load 0
  }
  return ReduceMax(acc);
}

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
  for (; i < n; ++i) {
    const uint32_t a = x[i] < 0 ? 0u - static_cast<uint32_t>(x[i]) : static_cast<uint32_t>(x[i]);
    g = a > g ? a : g;
  }
  return g;
}

int64_t QuantizeI8(const int64_t* x, int64_t n, const RowDivisorParams& p, int8_t* y) {
  const VecDivisor div(p);
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V v = LoadI64(x + i, left);
    const V v127 = Sub(_mm256_slli_epi64(v, 7), v);  // x * 127 modulo 2^64
    V ok;
    const V q = div.RoundHalfAway(v127, &ok);
    if (!AllSet(Or(ok, _mm256_xor_si256(TailMask(left), Set(-1))))) return i;
    StoreI8(y + i, left, SaturateI8(q));
  }
  return n;
}

int64_t MulColumnsMaxAbs(const int32_t* p, const int64_t* col_m, int64_t n, int64_t* s) {
  V acc = Set(1);
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V v = Mul(LoadI32(p + i, left), LoadI64(col_m + i, left));
    if (s != nullptr) StoreI64(s + i, left, v);
    acc = Max(acc, Abs(v));  // 0 in lanes past the end
  }
  return ReduceMax(acc);
}

void RequantI32(const int32_t* p, const int64_t* col_m, int64_t n, RoundShift sh, int32_t* y) {
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V v = Mul(LoadI32(p + i, left), LoadI64(col_m + i, left));
    StoreI32(y + i, left, Rsr(v, sh));  // int32(...) keeps the low bits
  }
}

int64_t RoundShiftMaxAbs(int64_t* s, int64_t n, RoundShift sh) {
  V acc = Set(1);
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V v = Rsr(LoadI64(s + i, left), sh);
    StoreI64(s + i, left, v);
    acc = Max(acc, And(Abs(v), TailMask(left)));  // rsr(0) need not be 0 (k = 64)
  }
  return ReduceMax(acc);
}

int64_t NormSumSquares(const int32_t* x, int64_t n, RoundShift down, int64_t up) {
  V acc = Zero();
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V xp = Shl(Rsr(LoadI32(x + i, left), down), up);
    acc = Add(acc, And(Mul(xp, xp), TailMask(left)));
  }
  return ReduceAdd(acc);
}

int64_t NormDivide(const int32_t* x, int64_t n, RoundShift down, int64_t up,
                   const RowDivisorParams& p, const int64_t* gamma, int32_t* y32, int64_t* y64) {
  const VecDivisor div(p);
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V xp = Shl(Rsr(LoadI32(x + i, left), down), up);
    V ok;
    const V q = div.RoundHalfAway(Shl(xp, 20), &ok);
    if (!AllSet(Or(ok, _mm256_xor_si256(TailMask(left), Set(-1))))) return i;
    if (gamma == nullptr) {
      StoreI32(y32 + i, left, q);
    } else {
      const V v = _mm256_cvtepi32_epi64(Low32(q));  // int32(q), sign-extended
      StoreI64(y64 + i, left, Mul(v, LoadI64(gamma + i, left)));
    }
  }
  return n;
}

inline V ResidualValue(V h, V d, V dm, RoundShift down, int64_t up) {
  return Add(h, Shl(Rsr(Mul(d, dm), down), up));
}

int64_t ResidualMaxAbs(const int32_t* h, const int32_t* d, int64_t n, int64_t dm, RoundShift down,
                       int64_t up) {
  const V vdm = Set(dm);
  V acc = Zero();
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V v = ResidualValue(LoadI32(h + i, left), LoadI32(d + i, left), vdm, down, up);
    acc = Max(acc, And(Abs(v), TailMask(left)));
  }
  return ReduceMax(acc);
}

void ResidualWrite(int32_t* h, const int32_t* d, int64_t n, int64_t dm, RoundShift down, int64_t up,
                   RoundShift down2, int64_t up2) {
  const V vdm = Set(dm);
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V v = ResidualValue(LoadI32(h + i, left), LoadI32(d + i, left), vdm, down, up);
    StoreI32(h + i, left, Shl(Rsr(v, down2), up2));
  }
}

void MulI32I64(const int32_t* x, const int64_t* mul, int64_t n, int64_t* y) {
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    StoreI64(y + i, left, Mul(LoadI32(x + i, left), LoadI64(mul + i, left)));
  }
}

void MulI64I64(const int64_t* x, const int64_t* mul, int64_t n, int64_t* y) {
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    StoreI64(y + i, left, Mul(LoadI64(x + i, left), LoadI64(mul + i, left)));
  }
}

void Rope(int64_t* x, int64_t d, const int16_t* cos_row, const int16_t* sin_row) {
  const int64_t half = d / 2;
  const RoundShift q14{14, int64_t{1} << 13};
  for (int64_t j = 0; j < half; j += kLanes) {
    const int64_t left = half - j;
    const V x1 = LoadI64(x + j, left), x2 = LoadI64(x + j + half, left);
    const V c1 = LoadI16(cos_row + j, left), s1 = LoadI16(sin_row + j, left);
    const V c2 = LoadI16(cos_row + j + half, left), s2 = LoadI16(sin_row + j + half, left);
    // x1*c - x2*s and x2*c' + x1*s', each rounded by 14 bits.
    const V o1 = Rsr(Sub(Mul(x1, c1), Mul(x2, s1)), q14);
    const V o2 = Rsr(Add(Mul(x2, c2), Mul(x1, s2)), q14);
    StoreI64(x + j, left, o1);
    StoreI64(x + j + half, left, o2);
  }
}

void Swiglu(const int32_t* gate, const int32_t* up, int64_t n, int64_t tpos,
            const RowDivisorParams& p, int64_t* y) {
  const VecDivisor div(p);
  const V t = Set(tpos), sign_bit = Set(INT64_MIN);
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V g = LoadI32(gate + i, left);
    const V e = DiExpOfNegative(Abs(g), t, div);  // E = DiExp(-|g|), in [0, tpos]
    const V den = Add(t, e);                      // in [1, 2^56)
    const V num = Select(SignOf(g), e, t);        // g >= 0: tpos, else E
    const V big = Add(_mm256_slli_epi64(num, 7), _mm256_srli_epi64(den, 1));
    const V big_flipped = Xor(big, sign_bit);
    // sigma = floor(big / den) in [0, 128]: the largest s < 256 with s * den <= big, bit by bit
    // (s * den < 2^64, compared unsigned: flipped sign bits, signed compare).
    V sigma = Zero();
    for (int64_t bit = 128; bit >= 1; bit >>= 1) {
      const V trial = Or(sigma, Set(bit));
      const V exceeds = Gt(Xor(MulSmall(trial, den), sign_bit), big_flipped);
      sigma = Select(exceeds, sigma, trial);
    }
    const V out = Mul(MulSmall(sigma, g), LoadI32(up + i, left));
    StoreI64(y + i, left, out);
  }
}

int64_t SoftmaxExps(const int32_t* scores, int64_t n, int64_t row_max, int64_t tpos,
                    const RowDivisorParams& p, int64_t* exps) {
  const VecDivisor div(p);
  const V t = Set(tpos), top = Set(row_max);
  V sum = Zero();
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V distance = Sub(top, LoadI32(scores + i, left));  // -(score - max) >= 0
    const V e = DiExpOfNegative(distance, t, div);
    StoreI64(exps + i, left, e);
    sum = Add(sum, And(e, TailMask(left)));
  }
  return ReduceAdd(sum);
}

int64_t SoftmaxNormalize(const int64_t* exps, int64_t n, const RowDivisorParams& p,
                         int32_t* probs) {
  const VecDivisor div(p);
  const V half = Set(static_cast<int64_t>(p.divisor >> 1));
  V sum = Zero();
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V q = div.Quotient(Add(_mm256_slli_epi64(LoadI64(exps + i, left), 14), half));
    StoreI32(probs + i, left, q);
    sum = Add(sum, And(q, TailMask(left)));
  }
  return ReduceAdd(sum);
}

int64_t RequantStatic(const int32_t* p, const int64_t* col_m, int64_t n, int64_t row_m, int64_t up,
                      const RowDivisorParams& params, int8_t* y) {
  const VecDivisor div(params);
  const V rm = Set(row_m);
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V num = Mul(Mul(LoadI32(p + i, left), LoadI64(col_m + i, left)), rm);
    V ok;
    const V q = div.RoundHalfAway(Shl(num, up), &ok);
    if (!AllSet(Or(ok, _mm256_xor_si256(TailMask(left), Set(-1))))) return i;
    StoreI8(y + i, left, SaturateI8(q));
  }
  return n;
}

// Per lane the first index of that lane's maximum (strict >), then the lane maxima reduced with
// ties to the lowest index: the smallest v attaining the maximum, as the scalar scan.
int64_t GreedyPick(const int32_t* logits, const int64_t* head_m, int64_t n) {
  const int64_t kNone = INT64_MAX;
  V best = Set(INT64_MIN), best_id = Set(kNone);
  V id = _mm256_set_epi64x(3, 2, 1, 0);
  for (int64_t v = 0; v < n; v += kLanes) {
    const int64_t left = n - v;
    const V scaled = Mul(LoadI32(logits + v, left), LoadI64(head_m + v, left));
    const V better = And(Gt(scaled, best), TailMask(left));
    best = Select(better, scaled, best);
    best_id = Select(better, id, best_id);
    id = Add(id, Set(kLanes));
  }
  alignas(32) int64_t values[kLanes], ids[kLanes];
  _mm256_store_si256(reinterpret_cast<V*>(values), best);
  _mm256_store_si256(reinterpret_cast<V*>(ids), best_id);
  int64_t top = INT64_MIN, top_id = kNone;
  for (int lane = 0; lane < kLanes; ++lane) {
    if (ids[lane] == kNone) continue;  // the lane never beat INT64_MIN
    if (values[lane] > top || (values[lane] == top && ids[lane] < top_id)) {
      top = values[lane];
      top_id = ids[lane];
    }
  }
  return top_id == kNone ? 0 : top_id;
}

// RequantI8Static with a divisor per element: den = s_m << max(row_k - s_k, 0) varies, so no
// multiply-shift constant applies; but only min(quotient, 255) matters (the result saturates to
// int8), and that is the largest t < 256 with t * den <= |num| + den/2, found bit by bit with
// exact products (t * den < 2^63 for den < 2^55).
int64_t RequantStaticColumns(const int64_t* p, int64_t n, int64_t row_m, int64_t row_k,
                             const int64_t* s_m, const int64_t* s_k, int8_t* y) {
  const V rm = Set(row_m), rk = Set(row_k), den_limit = Set(int64_t{1} << 55);
  for (int64_t i = 0; i < n; i += kLanes) {
    const int64_t left = n - i;
    const V shift = Sub(rk, LoadI64(s_k + i, left));
    const V up = Max(Sub(Zero(), shift), Zero());
    const V down = Max(shift, Zero());
    const V num = _mm256_sllv_epi64(Mul(LoadI64(p + i, left), rm), up);
    const V den = _mm256_sllv_epi64(LoadI64(s_m + i, left), down);
    const V big = Add(Abs(num), ShiftRightArith(den, Count(1)));
    const V ok = And(And(Gt(den, Zero()), Gt(den_limit, den)), Gt(big, Set(-1)));
    if (!AllSet(Or(ok, _mm256_xor_si256(TailMask(left), Set(-1))))) return i;
    V q = Zero();
    for (int64_t bit = 128; bit >= 1; bit >>= 1) {
      const V trial = Or(q, Set(bit));
      q = Select(Gt(MulSmall(trial, den), big), q, trial);
    }
    const V negative = SignOf(num);
    StoreI8(y + i, left, SaturateI8(Sub(Xor(q, negative), negative)));
  }
  return n;
}

constexpr RowKernels kAvx2RowKernels = DV_ROW_KERNEL_TABLE(CpuIsa::kAvx2);

}  // namespace

const RowKernels* RowKernelsAvx2() { return &kAvx2RowKernels; }

}  // namespace dv
