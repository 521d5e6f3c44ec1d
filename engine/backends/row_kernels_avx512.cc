// AVX-512 element loops of the cpu row operations (row_kernels_cpu.h), eight int64 lanes at a
// time; compiled with -mavx512f/bw/vl/dq and only called when CPUID reports them. Includes
// nothing but intrinsics and the table's declaration; every function is internal.
//
// Exactness: every lane computes the scalar formula. Wrapping +, -, * are vpaddq/vpsubq/vpmullq
// (modulo 2^64); |x| is vpabsq (|INT64_MIN| = INT64_MIN, as WrapAbs); shifts by a row-uniform
// count use vpsraq/vpsllq, whose counts >= 64 give the sign fill / 0 exactly as
// ShiftRightArith / ShiftLeftWrap; rsr's addend 1 << (k-1) comes precomputed (RoundShift).
// Divisions by the row's divisor use RowDivisor's multiply-shift with the 64x64 -> high-64
// product built from four 32x32 -> 64 vpmuludq; a lane whose dividend leaves [0, 2^63) stops
// the loop and the caller finishes the row with the scalar loop. Partial vectors are masked;
// masked-off lanes never reach a store or a reduction.
#include <immintrin.h>

#include <cstdint>

#include "engine/backends/row_kernels_cpu.h"

namespace dv {
namespace {

using V = __m512i;

inline V Set(int64_t v) { return _mm512_set1_epi64(v); }
inline V Zero() { return _mm512_setzero_si512(); }
inline __mmask8 TailMask(int64_t left) {
  return static_cast<__mmask8>(left >= 8 ? 0xFFu : (1u << left) - 1u);
}
// body(i, mask) for every 8 lanes of [0, n) while it returns true; returns the first i whose body
// returned false, else n. Whole vectors get the constant mask 0xFF, so that the compiler emits
// plain loads and stores for them (a masked load or store each iteration, vpmovqd's to memory
// above all, cost the requantization a quarter of its time), the tail, if any, its TailMask.
template <typename Body>
[[gnu::always_inline]] inline int64_t EachVectorWhile(int64_t n, Body&& body) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (!body(i, static_cast<__mmask8>(0xFF))) return i;
  }
  if (i < n && !body(i, TailMask(n - i))) return i;
  return n;
}
// The same for a body that never stops.
template <typename Body>
[[gnu::always_inline]] inline void EachVector(int64_t n, Body&& body) {
  EachVectorWhile(n, [&](int64_t i, __mmask8 m) {
    body(i, m);
    return true;
  });
}

inline V LoadI64(const int64_t* p, __mmask8 m) { return _mm512_maskz_loadu_epi64(m, p); }
inline V LoadI32(const int32_t* p, __mmask8 m) {
  return _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(m, p));
}
inline V LoadI16(const int16_t* p, __mmask8 m) {
  return _mm512_cvtepi16_epi64(_mm_maskz_loadu_epi16(m, p));
}
inline __m128i Count(int64_t c) { return _mm_cvtsi64_si128(c); }
inline V Rsr(V v, RoundShift sh) {
  return _mm512_sra_epi64(_mm512_add_epi64(v, Set(sh.addend)), Count(sh.count));
}
inline V Shl(V v, int64_t count) { return _mm512_sll_epi64(v, Count(count)); }

// Reductions in registers: a store to a stack array here let GCC keep the loops' accumulator in
// that array, a store and a reload every iteration on the loop's dependency chain.
inline int64_t ReduceMax(V v) {
  const __m256i m4 = _mm256_max_epi64(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  const __m128i m2 = _mm_max_epi64(_mm256_castsi256_si128(m4), _mm256_extracti128_si256(m4, 1));
  return _mm_cvtsi128_si64(_mm_max_epi64(m2, _mm_unpackhi_epi64(m2, m2)));
}
inline int64_t ReduceAdd(V v) {  // modulo 2^64
  const __m256i s4 = _mm256_add_epi64(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  const __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
  return _mm_cvtsi128_si64(_mm_add_epi64(s2, _mm_unpackhi_epi64(s2, s2)));
}

// p * m for lanes whose p is a sign-extended int32 and whose m is in [0, 2^31): vpmuldq's
// signed 32 x 32 -> 64 product of the low halves is then the whole product, one uop where
// vpmullq takes three. The weights' and the LM head's mantissas are such (< 2^16, checked at
// load, docs/SPEC.md §5.1.1); a kernel ORs a row's m together as it goes (NarrowLanes) and
// takes vpmullq after all where one is not.
inline V MulNarrow(V p, V m) { return _mm512_mul_epi32(p, m); }
// Every lane of `bits` (the OR of a row's m) in [0, 2^31).
inline bool NarrowLanes(V bits) {
  return _mm512_test_epi64_mask(bits, Set(~int64_t{0x7FFFFFFF})) == 0;
}
// p * m: with kNarrow MulNarrow's, m ORed into bits for NarrowLanes; else vpmullq's.
template <bool kNarrow>
inline V MulColumn(V p, V m, V& bits) {
  if constexpr (kNarrow) {
    bits = _mm512_or_si512(bits, m);
    return MulNarrow(p, m);
  } else {
    return _mm512_mullo_epi64(p, m);
  }
}

// High 64 bits of the unsigned 128-bit product a * b (b_hi = b >> 32).
inline V MulHiU64(V a, V b, V b_hi) {
  const V lo32 = Set(0xFFFFFFFF);
  const V a_hi = _mm512_srli_epi64(a, 32);
  const V ll = _mm512_mul_epu32(a, b);
  const V lh = _mm512_mul_epu32(a, b_hi);
  const V hl = _mm512_mul_epu32(a_hi, b);
  const V hh = _mm512_mul_epu32(a_hi, b_hi);
  // a*b = hh*2^64 + (lh + hl)*2^32 + ll; the middle column sums to less than 3 * 2^32.
  const V mid =
      _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(ll, 32), _mm512_and_si512(lh, lo32)),
                       _mm512_and_si512(hl, lo32));
  return _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(lh, 32)),
                          _mm512_add_epi64(_mm512_srli_epi64(hl, 32), _mm512_srli_epi64(mid, 32)));
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
    return unit_ ? n : _mm512_srl_epi64(MulHiU64(n, magic_, magic_hi_), shift_);
  }

  // The same for lanes with 0 <= n < 2^32: n's high half is 0, so the high product needs two of
  // the four partial products, (n * magic_hi + ((n * magic_lo) >> 32)) >> 32, whose sum stays
  // below 2^64.
  V Quotient32(V n) const {
    if (unit_) return n;
    const V low = _mm512_srli_epi64(_mm512_mul_epu32(n, magic_), 32);
    const V high = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epu32(n, magic_hi_), low), 32);
    return _mm512_srl_epi64(high, shift_);
  }

  // rhad(a, d) = sign(a) * floor((|a| + d/2) / d); *ok marks the lanes whose |a| + d/2 is in
  // [0, 2^63) (the others are not valid results).
  V RoundHalfAway(V a, __mmask8* ok) const {
    const __mmask8 negative = _mm512_cmplt_epi64_mask(a, Zero());
    const V num = _mm512_add_epi64(_mm512_abs_epi64(a), half_);
    *ok = _mm512_cmpge_epi64_mask(num, Zero());
    const V q = Quotient(num);
    return _mm512_mask_sub_epi64(q, negative, Zero(), q);
  }

 private:
  V magic_, magic_hi_, half_;
  __m128i shift_;
  bool unit_;
};

inline V SaturateI8(V v) { return _mm512_min_epi64(_mm512_max_epi64(v, Set(-128)), Set(127)); }

// DI-Exp of -ax for lanes with 0 <= ax < 2^32 (an int32 magnitude or a distance between int32
// values, the only arguments it has): q = floor(ax / tpos), r = q * tpos - ax, and
// ((r >> 1) + tpos) >> min(q, 62). q <= ax fits 32 bits, and q * tpos <= ax does too (q >= 1
// needs tpos <= ax), so one 32 x 32 -> 64 vpmuludq gives q * tpos exactly where vpmullq costs
// three uops.
inline V DiExpOfNegative32(V ax, V tpos, const VecDivisor& div) {
  const V q = div.Quotient32(ax);
  const V r = _mm512_sub_epi64(_mm512_mul_epu32(q, tpos), ax);
  const V u = _mm512_add_epi64(_mm512_srai_epi64(r, 1), tpos);
  return _mm512_srav_epi64(u, _mm512_min_epi64(q, Set(62)));
}

// min(floor(big / den), 255) for lanes with 0 <= big < 2^63 and 1 <= den < 2^56, by restoring
// division without a multiply: one quotient bit a step from 2^7 down, subtracting den << bit
// (< 2^63, so every compare is a signed one of non-negative values) where the remainder holds
// it. Where big >= 256 den every step subtracts and the result is 255.
inline V QuotientBelow256(V big, V den) {
  V r = big, d = _mm512_slli_epi64(den, 7), q = Zero();
  for (int64_t bit = 128; bit >= 1; bit >>= 1) {
    const __mmask8 fits = _mm512_cmpge_epi64_mask(r, d);
    r = _mm512_mask_sub_epi64(r, fits, r, d);
    q = _mm512_mask_or_epi64(q, fits, q, Set(bit));
    d = _mm512_srli_epi64(d, 1);
  }
  return q;
}

int64_t MaxAbsI64(const int64_t* x, int64_t n) {
  V acc = Set(1);
  EachVector(n, [&](int64_t i, __mmask8 m) {
    acc = _mm512_mask_max_epi64(acc, m, acc, _mm512_abs_epi64(LoadI64(x + i, m)));
  });
  return ReduceMax(acc);
}

int64_t MaxAbsI32(const int32_t* x, int64_t n) {
  // |x| as unsigned 32-bit lanes (|INT32_MIN| = 2^31 is exact there).
  __m512i acc = _mm512_setzero_si512();
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t left = n - i;
    const auto m = static_cast<__mmask16>(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
    acc = _mm512_max_epu32(acc, _mm512_abs_epi32(_mm512_maskz_loadu_epi32(m, x + i)));
  }
  alignas(64) uint32_t lanes[16];
  _mm512_store_si512(lanes, acc);
  uint32_t g = 0;
  for (uint32_t lane : lanes) g = lane > g ? lane : g;
  return g;
}

int64_t QuantizeI8(const int64_t* x, int64_t n, const RowDivisorParams& p, int8_t* y) {
  const VecDivisor div(p);
  return EachVectorWhile(n, [&](int64_t i, __mmask8 m) {
    const V v = LoadI64(x + i, m);
    const V v127 = _mm512_sub_epi64(_mm512_slli_epi64(v, 7), v);  // x * 127 modulo 2^64
    __mmask8 ok;
    const V q = div.RoundHalfAway(v127, &ok);
    if ((ok & m) != m) return false;
    _mm512_mask_cvtepi64_storeu_epi8(y + i, m, SaturateI8(q));
    return true;
  });
}

// With kNarrow the products take MulNarrow and *bits collects the OR of every col_m.
template <bool kNarrow>
int64_t MulColumnsMaxAbsAs(const int32_t* p, const int64_t* col_m, int64_t n, int64_t* s, V* bits) {
  V acc = Set(1), or_m = Zero();
  EachVector(n, [&](int64_t i, __mmask8 m) {
    const V v = MulColumn<kNarrow>(LoadI32(p + i, m), LoadI64(col_m + i, m), or_m);
    if (s != nullptr) _mm512_mask_storeu_epi64(s + i, m, v);
    acc = _mm512_mask_max_epi64(acc, m, acc, _mm512_abs_epi64(v));
  });
  if constexpr (kNarrow) *bits = or_m;
  return ReduceMax(acc);
}

int64_t MulColumnsMaxAbs(const int32_t* p, const int64_t* col_m, int64_t n, int64_t* s,
                         bool* narrow) {
  V bits;
  const int64_t a = MulColumnsMaxAbsAs<true>(p, col_m, n, s, &bits);
  const bool is_narrow = NarrowLanes(bits);
  if (narrow != nullptr) *narrow = is_narrow;
  return is_narrow ? a : MulColumnsMaxAbsAs<false>(p, col_m, n, s, nullptr);
}

template <bool kNarrow>
void RequantI32As(const int32_t* p, const int64_t* col_m, int64_t n, RoundShift sh, int32_t* y) {
  V unused = Zero();  // (narrow already established by the max pass)
  EachVector(n, [&](int64_t i, __mmask8 m) {
    const V v = MulColumn<kNarrow>(LoadI32(p + i, m), LoadI64(col_m + i, m), unused);
    _mm512_mask_cvtepi64_storeu_epi32(y + i, m, Rsr(v, sh));  // int32(...) keeps the low bits
  });
}

void RequantI32(const int32_t* p, const int64_t* col_m, int64_t n, RoundShift sh, bool narrow,
                int32_t* y) {
  if (narrow) {
    RequantI32As<true>(p, col_m, n, sh, y);
  } else {
    RequantI32As<false>(p, col_m, n, sh, y);
  }
}

int64_t RoundShiftMaxAbs(int64_t* s, int64_t n, RoundShift sh) {
  V acc = Set(1);
  EachVector(n, [&](int64_t i, __mmask8 m) {
    const V v = Rsr(LoadI64(s + i, m), sh);
    _mm512_mask_storeu_epi64(s + i, m, v);
    acc = _mm512_mask_max_epi64(acc, m, acc, _mm512_abs_epi64(v));
  });
  return ReduceMax(acc);
}

int64_t NormSumSquares(const int32_t* x, int64_t n, RoundShift down, int64_t up) {
  V acc = Zero();
  EachVector(n, [&](int64_t i, __mmask8 m) {
    const V xp = Shl(Rsr(LoadI32(x + i, m), down), up);
    acc = _mm512_mask_add_epi64(acc, m, acc, _mm512_mullo_epi64(xp, xp));
  });
  return ReduceAdd(acc);
}

int64_t NormDivide(const int32_t* x, int64_t n, RoundShift down, int64_t up,
                   const RowDivisorParams& p, const int64_t* gamma, int32_t* y32, int64_t* y64) {
  const VecDivisor div(p);
  return EachVectorWhile(n, [&](int64_t i, __mmask8 m) {
    const V xp = Shl(Rsr(LoadI32(x + i, m), down), up);
    __mmask8 ok;
    const V q = div.RoundHalfAway(Shl(xp, 20), &ok);
    if ((ok & m) != m) return false;
    if (gamma == nullptr) {
      _mm512_mask_cvtepi64_storeu_epi32(y32 + i, m, q);
    } else {
      const V v = _mm512_srai_epi64(_mm512_slli_epi64(q, 32), 32);  // int32(q), sign-extended
      _mm512_mask_storeu_epi64(y64 + i, m, _mm512_mullo_epi64(v, LoadI64(gamma + i, m)));
    }
    return true;
  });
}

inline V ResidualValue(V h, V d, V dm, RoundShift down, int64_t up) {
  return _mm512_add_epi64(h, Shl(Rsr(_mm512_mullo_epi64(d, dm), down), up));
}

int64_t ResidualMaxAbs(const int32_t* h, const int32_t* d, int64_t n, int64_t dm, RoundShift down,
                       int64_t up) {
  const V vdm = Set(dm);
  V acc = Zero();
  EachVector(n, [&](int64_t i, __mmask8 m) {
    const V v = ResidualValue(LoadI32(h + i, m), LoadI32(d + i, m), vdm, down, up);
    acc = _mm512_mask_max_epi64(acc, m, acc, _mm512_abs_epi64(v));
  });
  return ReduceMax(acc);
}

void ResidualWrite(int32_t* h, const int32_t* d, int64_t n, int64_t dm, RoundShift down, int64_t up,
                   RoundShift down2, int64_t up2) {
  const V vdm = Set(dm);
  EachVector(n, [&](int64_t i, __mmask8 m) {
    const V v = ResidualValue(LoadI32(h + i, m), LoadI32(d + i, m), vdm, down, up);
    _mm512_mask_cvtepi64_storeu_epi32(h + i, m, Shl(Rsr(v, down2), up2));
  });
}

void MulI32I64(const int32_t* x, const int64_t* mul, int64_t n, int64_t* y) {
  V bits = Zero();
  EachVector(n, [&](int64_t i, __mmask8 m) {
    const V cm = LoadI64(mul + i, m);
    bits = _mm512_or_si512(bits, cm);
    _mm512_mask_storeu_epi64(y + i, m, MulNarrow(LoadI32(x + i, m), cm));
  });
  if (NarrowLanes(bits)) return;
  // A multiplier past 2^31 or negative: every product again.
  EachVector(n, [&](int64_t i, __mmask8 m) {
    _mm512_mask_storeu_epi64(y + i, m, _mm512_mullo_epi64(LoadI32(x + i, m), LoadI64(mul + i, m)));
  });
}

void MulI64I64(const int64_t* x, const int64_t* mul, int64_t n, int64_t* y) {
  EachVector(n, [&](int64_t i, __mmask8 m) {
    _mm512_mask_storeu_epi64(y + i, m, _mm512_mullo_epi64(LoadI64(x + i, m), LoadI64(mul + i, m)));
  });
}

void Rope(int64_t* x, int64_t d, const int16_t* cos_row, const int16_t* sin_row) {
  const int64_t half = d / 2;
  const RoundShift q14{14, int64_t{1} << 13};
  for (int64_t j = 0; j < half; j += 8) {
    const __mmask8 m = TailMask(half - j);
    const V x1 = LoadI64(x + j, m), x2 = LoadI64(x + j + half, m);
    const V c1 = LoadI16(cos_row + j, m), s1 = LoadI16(sin_row + j, m);
    const V c2 = LoadI16(cos_row + j + half, m), s2 = LoadI16(sin_row + j + half, m);
    // x1*c - x2*s and x2*c' + x1*s', each rounded by 14 bits.
    const V o1 = Rsr(_mm512_sub_epi64(_mm512_mullo_epi64(x1, c1), _mm512_mullo_epi64(x2, s1)), q14);
    const V o2 = Rsr(_mm512_add_epi64(_mm512_mullo_epi64(x2, c2), _mm512_mullo_epi64(x1, s2)), q14);
    _mm512_mask_storeu_epi64(x + j, m, o1);
    _mm512_mask_storeu_epi64(x + j + half, m, o2);
  }
}

void Swiglu(const int32_t* gate, const int32_t* up, int64_t n, int64_t tpos,
            const RowDivisorParams& p, int64_t* y) {
  const VecDivisor div(p);
  const V t = Set(tpos);
  EachVector(n, [&](int64_t i, __mmask8 m) {
    const V g = LoadI32(gate + i, m);
    const V e = DiExpOfNegative32(_mm512_abs_epi64(g), t, div);  // E = DiExp(-|g|) in [0, tpos]
    const V den = _mm512_add_epi64(t, e);                        // in [1, 2^56)
    const V num = _mm512_mask_blend_epi64(_mm512_cmpge_epi64_mask(g, Zero()), e, t);
    // sigma = floor(big / den) in [0, 128]: big = (num << 7) + den / 2 < 2^62 + 2^55 (num <=
    // tpos < 2^55).
    const V sigma = QuotientBelow256(
        _mm512_add_epi64(_mm512_slli_epi64(num, 7), _mm512_srli_epi64(den, 1)), den);
    // g * sigma fits 39 bits (vpmuldq, exact); the product with up wraps modulo 2^64.
    const V out = _mm512_mullo_epi64(_mm512_mul_epi32(g, sigma), LoadI32(up + i, m));
    _mm512_mask_storeu_epi64(y + i, m, out);
  });
}

int64_t SoftmaxExps(const int32_t* scores, int64_t n, int32_t row_max, int64_t tpos,
                    const RowDivisorParams& p, int64_t* exps) {
  const VecDivisor div(p);
  const V t = Set(tpos), top = Set(row_max);
  V sum = Zero();
  EachVector(n, [&](int64_t i, __mmask8 m) {
    const V distance = _mm512_sub_epi64(top, LoadI32(scores + i, m));  // -(score - max) >= 0
    const V e = DiExpOfNegative32(distance, t, div);  // int32 values: a distance below 2^32
    _mm512_mask_storeu_epi64(exps + i, m, e);
    sum = _mm512_mask_add_epi64(sum, m, sum, e);
  });
  return ReduceAdd(sum);
}

int64_t SoftmaxNormalize(const int64_t* exps, int64_t n, const RowDivisorParams& p,
                         int32_t* probs) {
  const VecDivisor div(p);
  const V half = Set(static_cast<int64_t>(p.divisor >> 1));
  V sum = Zero();
  EachVector(n, [&](int64_t i, __mmask8 m) {
    const V q = div.Quotient(_mm512_add_epi64(_mm512_slli_epi64(LoadI64(exps + i, m), 14), half));
    _mm512_mask_cvtepi64_storeu_epi32(probs + i, m, q);
    sum = _mm512_mask_add_epi64(sum, m, sum, q);
  });
  return ReduceAdd(sum);
}

int64_t RequantStatic(const int32_t* p, const int64_t* col_m, int64_t n, int64_t row_m, int64_t up,
                      const RowDivisorParams& params, int8_t* y) {
  const VecDivisor div(params);
  const V rm = Set(row_m);
  return EachVectorWhile(n, [&](int64_t i, __mmask8 m) {
    const V num =
        _mm512_mullo_epi64(_mm512_mullo_epi64(LoadI32(p + i, m), LoadI64(col_m + i, m)), rm);
    __mmask8 ok;
    const V q = div.RoundHalfAway(Shl(num, up), &ok);
    if ((ok & m) != m) return false;
    _mm512_mask_cvtepi64_storeu_epi8(y + i, m, SaturateI8(q));
    return true;
  });
}

// Per lane the first index of that lane's maximum (strict >), then the lane maxima reduced with
// ties to the lowest index: the smallest v attaining the maximum, as the scalar scan.
template <bool kNarrow>
int64_t GreedyPickAs(const int32_t* logits, const int64_t* head_m, int64_t n, V* bits) {
  const int64_t kNone = INT64_MAX;
  V best = Set(INT64_MIN), best_id = Set(kNone), or_m = Zero();
  V id = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  EachVector(n, [&](int64_t v, __mmask8 m) {
    const V scaled = MulColumn<kNarrow>(LoadI32(logits + v, m), LoadI64(head_m + v, m), or_m);
    const __mmask8 better = _mm512_mask_cmpgt_epi64_mask(m, scaled, best);
    best = _mm512_mask_mov_epi64(best, better, scaled);
    best_id = _mm512_mask_mov_epi64(best_id, better, id);
    id = _mm512_add_epi64(id, Set(8));
  });
  alignas(64) int64_t values[8], ids[8];
  _mm512_store_si512(values, best);
  _mm512_store_si512(ids, best_id);
  int64_t top = INT64_MIN, top_id = kNone;
  for (int lane = 0; lane < 8; ++lane) {
    if (ids[lane] == kNone) continue;  // the lane never beat INT64_MIN
    if (values[lane] > top || (values[lane] == top && ids[lane] < top_id)) {
      top = values[lane];
      top_id = ids[lane];
    }
  }
  if constexpr (kNarrow) *bits = or_m;
  return top_id == kNone ? 0 : top_id;
}

int64_t GreedyPick(const int32_t* logits, const int64_t* head_m, int64_t n) {
  V bits;
  const int64_t pick = GreedyPickAs<true>(logits, head_m, n, &bits);
  return NarrowLanes(bits) ? pick : GreedyPickAs<false>(logits, head_m, n, nullptr);
}

// RequantI8Static with a divisor per element: den = s_m << max(row_k - s_k, 0) varies, so no
// multiply-shift constant applies; but only min(quotient, 255) matters (the result saturates to
// int8): QuotientBelow256 of |num| + den/2 (den < 2^55).
int64_t RequantStaticColumns(const int64_t* p, int64_t n, int64_t row_m, int64_t row_k,
                             const int64_t* s_m, const int64_t* s_k, int8_t* y) {
  const V rm = Set(row_m), rk = Set(row_k), den_limit = Set(int64_t{1} << 55);
  return EachVectorWhile(n, [&](int64_t i, __mmask8 m) {
    const V shift = _mm512_sub_epi64(rk, LoadI64(s_k + i, m));
    const V up = _mm512_max_epi64(_mm512_sub_epi64(Zero(), shift), Zero());
    const V down = _mm512_max_epi64(shift, Zero());
    const V num = _mm512_sllv_epi64(_mm512_mullo_epi64(LoadI64(p + i, m), rm), up);
    const V den = _mm512_sllv_epi64(LoadI64(s_m + i, m), down);
    const V big = _mm512_add_epi64(_mm512_abs_epi64(num), _mm512_srai_epi64(den, 1));
    const __mmask8 ok = _mm512_cmpgt_epi64_mask(den, Zero()) &
                        _mm512_cmplt_epi64_mask(den, den_limit) &
                        _mm512_cmpge_epi64_mask(big, Zero());
    if ((ok & m) != m) return false;
    const V q = QuotientBelow256(big, den);
    const V r = _mm512_mask_sub_epi64(q, _mm512_cmplt_epi64_mask(num, Zero()), Zero(), q);
    _mm512_mask_cvtepi64_storeu_epi8(y + i, m, SaturateI8(r));
    return true;
  });
}

constexpr RowKernels kAvx512RowKernels = DV_ROW_KERNEL_TABLE(CpuIsa::kAvx512Vnni);

}  // namespace

const RowKernels* RowKernelsAvx512() { return &kAvx512RowKernels; }

}  // namespace dv
