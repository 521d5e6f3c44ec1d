#include "engine/backends/cpu_row_ops.h"

#include <cstring>

#include "engine/backends/cpu_divide.h"

namespace dv {
namespace {

// Attend's fast path keeps every intermediate far from its type's edge: q8 fits a stack buffer,
// no score sum can reach 2^31 (d4 * 2^14 < 2^31), tpos < 2^48 so e << 14 < 2^62 and the
// denominator sum over at most 2^15 slots stays below 2^63, and the probabilities then sum to
// less than 2^23, which the int32 context kernels require.
constexpr int64_t kFastMaxHeadDim = 1024;
constexpr int64_t kFastMaxSlots = int64_t{1} << 15;
constexpr int64_t kFastMaxTpos = int64_t{1} << 48;
constexpr int64_t kFastMaxProbSum = int64_t{1} << 23;
// Swiglu's fast path: every sigmoid operand small and non-negative (row_kernels_cpu.h).
constexpr int64_t kFastMaxSwigluTpos = int64_t{1} << 55;

}  // namespace

CpuRowOps::CpuRowOps(CpuIsa isa, int64_t prefetch_bytes)
    : k_(RowKernelsFor(isa)),
      scalar_(*RowKernelsScalar()),
      attention_(AttentionI8KernelFor(isa)),
      prefetch_bytes_(prefetch_bytes) {}

// DiRmsNorm / DiRmsNormGamma: pre-shift the row's top bit to 25, rms = isqrt of the rounded mean
// square, divide by rms.
void CpuRowOps::RmsNorm(const int32_t* x, int64_t n, int32_t* y) const {
  const int64_t sh = kNormPreShiftMsb - Ilog2Floor(Max(k_.max_abs_i32(x, n), 1));
  const RoundShift down = MakeRoundShift(Max(-sh, 0));
  const int64_t up = Max(sh, 0);
  const int64_t ssum = k_.norm_sum_squares(x, n, down, up);
  const RowDivisor div(static_cast<uint64_t>(Max(Isqrt(RoundHalfAwayDiv(ssum, n)), 1)));
  const int64_t done = k_.norm_divide(x, n, down, up, div.params(), nullptr, y, nullptr);
  scalar_.norm_divide(x + done, n - done, down, up, div.params(), nullptr, y + done, nullptr);
}

void CpuRowOps::RmsNormGamma(const int32_t* x, int64_t n, const int64_t* gamma_m,
                             int64_t* y) const {
  const int64_t sh = kNormPreShiftMsb - Ilog2Floor(Max(k_.max_abs_i32(x, n), 1));
  const RoundShift down = MakeRoundShift(Max(-sh, 0));
  const int64_t up = Max(sh, 0);
  const int64_t ssum = k_.norm_sum_squares(x, n, down, up);
  const RowDivisor div(static_cast<uint64_t>(Max(Isqrt(RoundHalfAwayDiv(ssum, n)), 1)));
  const int64_t done = k_.norm_divide(x, n, down, up, div.params(), gamma_m, nullptr, y);
  scalar_.norm_divide(x + done, n - done, down, up, div.params(), gamma_m + done, nullptr,
                      y + done);
}

Dyadic CpuRowOps::QuantI8(const int64_t* x, int64_t n, int64_t m, int64_t k, int8_t* x8,
                          WrapCounter* wraps) const {
  const Dyadic s = NormScale(m, k);
  const int64_t a = k_.max_abs_i64(x, n);
  const RowDivisor div(static_cast<uint64_t>(a));
  const int64_t done = k_.quantize_i8(x, n, div.params(), x8);
  scalar_.quantize_i8(x + done, n - done, div.params(), x8 + done);
  if (wraps != nullptr && MulOverflows(a, s.m)) ++wraps->events;
  const Dyadic r = FitDyadicRatio(WrapMul(a, s.m), 127);
  return {r.m, WrapAdd(s.k, r.k)};
}

int64_t CpuRowOps::RequantI32(const int32_t* p, const int64_t* col_m, int64_t n,
                              int64_t target_bits, int32_t* y) const {
  bool narrow = false;
  const int64_t a = k_.mul_columns_max_abs(p, col_m, n, nullptr, &narrow);
  const int64_t sh = Max(Ilog2Floor(a) - (target_bits - 1), 0);
  k_.requant_i32(p, col_m, n, MakeRoundShift(sh), narrow, y);
  return sh;
}

Dyadic CpuRowOps::RequantI8RowColumn(const int64_t* p, const int64_t* col_m, int64_t n,
                                     int64_t row_m, int64_t row_k, int64_t col_k, int64_t* s,
                                     int8_t* y8, WrapCounter* wraps) const {
  k_.mul_i64_i64(p, col_m, n, s);
  int64_t a = k_.max_abs_i64(s, n);
  const int64_t sh = Max(Ilog2Floor(a) - kRowColPreShiftBits, 0);
  if (sh > 0) a = k_.round_shift_max_abs(s, n, MakeRoundShift(sh));
  const RowDivisor div(static_cast<uint64_t>(a));
  const int64_t done = k_.quantize_i8(s, n, div.params(), y8);
  scalar_.quantize_i8(s + done, n - done, div.params(), y8 + done);
  if (wraps != nullptr && MulOverflows(a, row_m)) ++wraps->events;
  const Dyadic r = FitDyadicRatio(WrapMul(a, row_m), 127);
  return {r.m, WrapSub(WrapAdd(WrapAdd(row_k, col_k), r.k), sh)};
}

void CpuRowOps::RequantI8StaticRow(const int32_t* p, int64_t n, int64_t row_m, int64_t row_k,
                                   const int64_t* col_m, int64_t col_k, int64_t s_m, int64_t s_k,
                                   int8_t* y8) const {
  // RequantI8Static with the row's shared denominator s_m << max(shift, 0).
  const int64_t shift = WrapSub(WrapAdd(row_k, col_k), s_k);
  const int64_t up = Max(WrapNeg(shift), 0);
  const int64_t den = ShiftLeftWrap(s_m, Max(shift, 0));
  if (den < 1) {  // a wrapped scale: the plain definition, element by element
    RowOps::RequantI8StaticRow(p, n, row_m, row_k, col_m, col_k, s_m, s_k, y8);
    return;
  }
  const RowDivisor div(static_cast<uint64_t>(den));
  const int64_t done = k_.requant_static(p, col_m, n, row_m, up, div.params(), y8);
  scalar_.requant_static(p + done, col_m + done, n - done, row_m, up, div.params(), y8 + done);
}

void CpuRowOps::RequantI8StaticColumns(const int64_t* p, int64_t n, int64_t row_m, int64_t row_k,
                                       const int64_t* s_m, const int64_t* s_k, int8_t* y8) const {
  const int64_t done = k_.requant_static_columns(p, n, row_m, row_k, s_m, s_k, y8);
  scalar_.requant_static_columns(p + done, n - done, row_m, row_k, s_m + done, s_k + done,
                                 y8 + done);
}

// ResidualAdd = ResidualRenormWith(h + aligned delta): max pass, then the renormalizing write.
int64_t CpuRowOps::AddResidual(int32_t* h, int64_t n, int64_t k_res, const int32_t* d, int64_t dm,
                               int64_t dk) const {
  const int64_t rel = WrapSub(dk, k_res);
  const RoundShift down = MakeRoundShift(Max(rel, 0));
  const int64_t up = Max(WrapNeg(rel), 0);
  const int64_t g = k_.residual_max_abs(h, d, n, dm, down, up);
  const int64_t lg = Ilog2Floor(Max(g, 1));
  const int64_t down2 = Max(lg - (kResidualMaxBits - 1), 0);
  int64_t up2 = g > 0 ? Max(kResidualUpBits - lg, 0) : 0;
  if (down2 > 0) up2 = 0;
  k_.residual_write(h, d, n, dm, down, up, MakeRoundShift(down2), up2);
  return WrapAdd(WrapSub(k_res, down2), up2);
}

void CpuRowOps::MulColumns(const int32_t* x, const int64_t* m, int64_t n, int64_t* y) const {
  k_.mul_i32_i64(x, m, n, y);
}

void CpuRowOps::MulColumns(const int64_t* x, const int64_t* m, int64_t n, int64_t* y) const {
  k_.mul_i64_i64(x, m, n, y);
}

void CpuRowOps::Rope(int64_t* x, int64_t d, const int16_t* cos_row, const int16_t* sin_row) const {
  k_.rope(x, d, cos_row, sin_row);
}

void CpuRowOps::Swiglu(const int32_t* gate, const int32_t* up, int64_t n, int64_t tpos,
                       int64_t* y) const {
  if (tpos < 1 || tpos >= kFastMaxSwigluTpos) {
    RowOps::Swiglu(gate, up, n, tpos, y);
    return;
  }
  const RowDivisor tpos_div(static_cast<uint64_t>(tpos));
  k_.swiglu(gate, up, n, tpos, tpos_div.params(), y);
}

int32_t CpuRowOps::GreedyPick(const int32_t* logits, const int64_t* head_m, int64_t n) const {
  return static_cast<int32_t>(k_.greedy_pick(logits, head_m, n));
}

namespace {

// ctx[j] = sum_s p[s] * v[s][j] by the definition, for probabilities the int32 kernels do not
// take (a sum of 2^23 or more cannot happen when the denominator is the sum of the exps).
void ContextPlain(const int32_t* probs, const KvHeadView& kv, int64_t n_slots, int64_t* ctx) {
  const int64_t d = kv.head_dim, d4 = KvPaddedDim(d);
  for (int64_t j = 0; j < d; ++j) {
    int64_t acc = 0;
    for (int64_t s = 0; s < n_slots; ++s) {
      acc = WrapAdd(acc, static_cast<int64_t>(probs[s]) * kv.v[KvVOffset(s, j, d4)]);
    }
    ctx[j] = acc;
  }
}

}  // namespace

bool CpuRowOps::AttendFast(int64_t head_dim, int64_t n_slots, int64_t tpos) {
  return KvPaddedDim(head_dim) <= kFastMaxHeadDim && n_slots <= kFastMaxSlots && n_slots >= 1 &&
         tpos < kFastMaxTpos;
}

// DiSoftmax (engine/ops/di_softmax.h), all slots visible: the row maximum, DI-Exp of each
// score's distance to it, and rhad(e << 14, max(sum e, 1)). Returns the probabilities' sum.
int64_t CpuRowOps::Softmax(const int32_t* scores, int64_t n_slots, int64_t tpos, int64_t* exps,
                           int32_t* probs) const {
  int32_t row_max = scores[0];
  for (int64_t i = 1; i < n_slots; ++i) row_max = scores[i] > row_max ? scores[i] : row_max;
  const RowDivisor tpos_div(static_cast<uint64_t>(tpos));
  const int64_t denom = k_.softmax_exps(scores, n_slots, row_max, tpos, tpos_div.params(), exps);
  const RowDivisor denom_div(static_cast<uint64_t>(Max(denom, 1)));
  return k_.softmax_normalize(exps, n_slots, denom_div.params(), probs);
}

int64_t CpuRowOps::Attend(const int8_t* q8, const KvHeadView& kv, int64_t n_slots, Dyadic scale,
                          int32_t* scores, int64_t* exps, int32_t* probs, int64_t* ctx) const {
  const int64_t d = kv.head_dim, d4 = KvPaddedDim(d);
  const int64_t tpos = DiExpTpos(scale.m, scale.k);
  if (!AttendFast(d, n_slots, tpos)) {
    return RowOps::Attend(q8, kv, n_slots, scale, scores, exps, probs, ctx);
  }
  int8_t q_padded[kFastMaxHeadDim];
  std::memcpy(q_padded, q8, static_cast<size_t>(d));
  std::memset(q_padded + d, 0, static_cast<size_t>(d4 - d));
  attention_.scores(q_padded, kv.k, n_slots, d4, scores);
  if (Softmax(scores, n_slots, tpos, exps, probs) >= kFastMaxProbSum) {
    ContextPlain(probs, kv, n_slots, ctx);
  } else {
    attention_.context(probs, kv.v, n_slots, d, d4, ctx);
  }
  return tpos;
}

// Query heads in pairs: one pass over K gives both pairs' scores, one pass over V both
// contexts, so the group reads its KV head once instead of once per query. Each query's numbers
// are exactly Attend's.
void CpuRowOps::AttendGroup(int64_t queries, const int8_t* q8, const KvHeadView& kv,
                            int64_t n_slots, const Dyadic* scales, int64_t slot_stride,
                            int32_t* scores, int64_t* exps, int32_t* probs, int64_t* ctx,
                            int64_t* tpos) const {
  const int64_t d = kv.head_dim, d4 = KvPaddedDim(d);
  int64_t i = 0;
  if (attention_.scores_pair != nullptr) {
    for (; i + 2 <= queries; i += 2) {
      const int64_t ta = DiExpTpos(scales[i].m, scales[i].k);
      const int64_t tb = DiExpTpos(scales[i + 1].m, scales[i + 1].k);
      if (!AttendFast(d, n_slots, ta) || !AttendFast(d, n_slots, tb)) break;
      int8_t qa[kFastMaxHeadDim], qb[kFastMaxHeadDim];
      std::memcpy(qa, q8 + i * d, static_cast<size_t>(d));
      std::memcpy(qb, q8 + (i + 1) * d, static_cast<size_t>(d));
      std::memset(qa + d, 0, static_cast<size_t>(d4 - d));
      std::memset(qb + d, 0, static_cast<size_t>(d4 - d));
      int32_t* sa = scores + i * slot_stride;
      int32_t* sb = sa + slot_stride;
      attention_.scores_pair(qa, qb, kv.k, n_slots, d4, prefetch_bytes_, sa, sb);
      int32_t* pa = probs + i * slot_stride;
      int32_t* pb = pa + slot_stride;
      const int64_t sum_a = Softmax(sa, n_slots, ta, exps + i * slot_stride, pa);
      const int64_t sum_b = Softmax(sb, n_slots, tb, exps + (i + 1) * slot_stride, pb);
      int64_t* ca = ctx + i * d;
      int64_t* cb = ca + d;
      if (sum_a < kFastMaxProbSum && sum_b < kFastMaxProbSum) {
        attention_.context_pair(pa, pb, kv.v, n_slots, d, d4, prefetch_bytes_, ca, cb);
      } else {
        ContextPlain(pa, kv, n_slots, ca);
        ContextPlain(pb, kv, n_slots, cb);
      }
      tpos[i] = ta;
      tpos[i + 1] = tb;
    }
  }
  for (; i < queries; ++i) {
    tpos[i] = Attend(q8 + i * d, kv, n_slots, scales[i], scores + i * slot_stride,
                     exps + i * slot_stride, probs + i * slot_stride, ctx + i * d);
  }
}

}  // namespace dv
