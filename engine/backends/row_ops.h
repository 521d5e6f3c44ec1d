// The per-row operations of the forward pass (docs/SPEC.md §3-§4), as a backend supplies them.
//
// Every operation here is one row of the spec's arithmetic; RowOps' own implementations are the
// plain definitions (engine/dyadic.h, engine/ops/) and are what the reference backend uses. A
// backend may override any of them with a faster version that returns the same bits for every
// input, wrap edges included; tests/cpu_backend/row_ops_cpu_test.cc holds the cpu backend's
// versions to that, operation by operation.
#pragma once

#include <cstdint>

#include "engine/dyadic.h"
#include "engine/intmath.h"
#include "engine/ops/di_exp.h"
#include "engine/ops/di_rmsnorm.h"
#include "engine/ops/di_softmax.h"
#include "engine/ops/di_swiglu.h"
#include "engine/ops/rope.h"

namespace dv {

// ---- The K/V cache layout of one (layer, KV head)
// ------------------------------------------------ Slots are grouped for the decode kernels. d4 =
// head_dim rounded up to a multiple of 4; padding bytes are 0.
//   K: blocks of 16 slots, [slot/16][j/4][slot%16][j%4] -- 16 slots' scores form one vector of
//      int32 lanes, filled 4 channels at a time.
//   V: groups of 4 slots, [slot/4][j][slot%4] -- one int32 lane per channel takes 4 slots'
//      probabilities at a time.
// Capacity is rounded up to whole K blocks (16 slots).
inline constexpr int64_t kKvSlotBlock = 16;
DV_INLINE constexpr int64_t KvPaddedDim(int64_t head_dim) { return (head_dim + 3) / 4 * 4; }
DV_INLINE constexpr int64_t KvPaddedSlots(int64_t slots) {
  return (slots + kKvSlotBlock - 1) / kKvSlotBlock * kKvSlotBlock;
}
DV_INLINE constexpr int64_t KvKOffset(int64_t slot, int64_t j, int64_t d4) {
  return (slot / 16) * 16 * d4 + (j / 4) * 64 + (slot % 16) * 4 + j % 4;
}
DV_INLINE constexpr int64_t KvVOffset(int64_t slot, int64_t j, int64_t d4) {
  return (slot / 4) * 4 * d4 + j * 4 + slot % 4;
}

// One (layer, KV head) of a row's cache, read-only.
struct KvHeadView {
  const int8_t* k = nullptr;  // KvKOffset layout
  const int8_t* v = nullptr;  // KvVOffset layout
  int64_t head_dim = 0;       // d (d4 = KvPaddedDim(d))
};

class RowOps {
 public:
  virtual ~RowOps() = default;

  // DiRmsNorm: y[n] int32 at scale 2^-20.
  virtual void RmsNorm(const int32_t* x, int64_t n, int32_t* y) const { DiRmsNorm(x, n, y); }

  // DiRmsNormGamma: y[n] int64 = DiRmsNorm(x) * gamma_m.
  virtual void RmsNormGamma(const int32_t* x, int64_t n, const int64_t* gamma_m, int64_t* y) const {
    DiRmsNormGamma(x, n, gamma_m, y);
  }

  // QuantI8PerToken of an int64 row.
  virtual Dyadic QuantI8(const int64_t* x, int64_t n, int64_t m, int64_t k, int8_t* x8,
                         WrapCounter* wraps) const {
    return QuantI8PerToken(x, n, m, k, x8, wraps);
  }

  // RequantI32Common (in place allowed: y == p). Returns the shift.
  virtual int64_t RequantI32(const int32_t* p, const int64_t* col_m, int64_t n, int64_t target_bits,
                             int32_t* y) const {
    return RequantI32Common(p, col_m, n, target_bits, y);
  }

  // RequantI8RowCol; s is scratch of n int64.
  virtual Dyadic RequantI8RowColumn(const int64_t* p, const int64_t* col_m, int64_t n,
                                    int64_t row_m, int64_t row_k, int64_t col_k, int64_t* s,
                                    int8_t* y8, WrapCounter* wraps) const {
    return RequantI8RowCol(p, col_m, n, row_m, row_k, col_k, s, y8, wraps);
  }

  // y8[i] = RequantI8Static(p[i], row_m, row_k, col_m[i], col_k, s_m, s_k): one row at one
  // static target scale (the V cache entry of one token and KV head).
  virtual void RequantI8StaticRow(const int32_t* p, int64_t n, int64_t row_m, int64_t row_k,
                                  const int64_t* col_m, int64_t col_k, int64_t s_m, int64_t s_k,
                                  int8_t* y8) const {
    for (int64_t i = 0; i < n; ++i)
      y8[i] = RequantI8Static(p[i], row_m, row_k, col_m[i], col_k, s_m, s_k);
  }

  // y8[i] = RequantI8Static(p[i], row_m, row_k, 1, 0, s_m[i], s_k[i]): one row at per-channel
  // static target scales (the K cache entry of one token and KV head).
  virtual void RequantI8StaticColumns(const int64_t* p, int64_t n, int64_t row_m, int64_t row_k,
                                      const int64_t* s_m, const int64_t* s_k, int8_t* y8) const {
    for (int64_t i = 0; i < n; ++i)
      y8[i] = RequantI8Static(p[i], row_m, row_k, 1, 0, s_m[i], s_k[i]);
  }

  // ResidualAdd: h += d * dm / 2^dk in place; returns the new k_res.
  virtual int64_t AddResidual(int32_t* h, int64_t n, int64_t k_res, const int32_t* d, int64_t dm,
                              int64_t dk) const {
    return ResidualAdd(h, n, k_res, d, dm, dk);
  }

  // y[i] = x[i] * m[i] (smoothing multipliers and similar per-channel products). The int64 form
  // may run in place (y == x); the int32 form's y does not overlap x.
  virtual void MulColumns(const int32_t* x, const int64_t* m, int64_t n, int64_t* y) const {
    for (int64_t i = 0; i < n; ++i) y[i] = WrapMul(x[i], m[i]);
  }
  virtual void MulColumns(const int64_t* x, const int64_t* m, int64_t n, int64_t* y) const {
    for (int64_t i = 0; i < n; ++i) y[i] = WrapMul(x[i], m[i]);
  }

  // ApplyIntRope: x[d] rotated in place with one position's Q14 table rows.
  virtual void Rope(int64_t* x, int64_t d, const int16_t* cos_row, const int16_t* sin_row) const {
    ApplyIntRope(x, d, cos_row, sin_row);
  }

  // DiSwiglu with the gate row's tpos.
  virtual void Swiglu(const int32_t* gate, const int32_t* up, int64_t n, int64_t tpos,
                      int64_t* y) const {
    DiSwiglu(gate, up, n, tpos, y);
  }

  // Greedy pick (docs/SPEC.md §5.6): the smallest v attaining max_v logits[v] * head_m[v]
  // (int64 products); 0 when every product is INT64_MIN.
  virtual int32_t GreedyPick(const int32_t* logits, const int64_t* head_m, int64_t n) const {
    int64_t best = kInt64Min;
    int32_t best_id = 0;
    for (int64_t v = 0; v < n; ++v) {
      const int64_t scaled = WrapMul(logits[v], head_m[v]);
      if (scaled > best) {  // strict: ties keep the lowest id
        best = scaled;
        best_id = static_cast<int32_t>(v);
      }
    }
    return best_id;
  }

  // Attention of one query row (one token, one query head) over slots [0, n_slots) of one KV
  // head, all visible (docs/SPEC.md A14-A17):
  //   scores[s] = sum_j q8[j] * k8[s][j] (int32), p = DiSoftmax(scores, scale), ctx[j] =
  //   sum_s p[s] * v8[s][j] (int64, [head_dim]).
  // scores [n_slots] int32 and exps [n_slots] int64 are scratch; probs [n_slots] receives p.
  // Returns DI-Exp's tpos.
  virtual int64_t Attend(const int8_t* q8, const KvHeadView& kv, int64_t n_slots, Dyadic scale,
                         int32_t* scores, int64_t* exps, int32_t* probs, int64_t* ctx) const {
    const int64_t d = kv.head_dim, d4 = KvPaddedDim(d);
    for (int64_t s = 0; s < n_slots; ++s) {
      int32_t acc = 0;
      for (int64_t j = 0; j < d; ++j) acc += q8[j] * kv.k[KvKOffset(s, j, d4)];
      scores[s] = acc;
    }
    const int64_t tpos = DiSoftmax(scores, nullptr, n_slots, scale.m, scale.k, exps, probs);
    for (int64_t j = 0; j < d; ++j) {
      int64_t acc = 0;
      for (int64_t s = 0; s < n_slots; ++s) {
        acc = WrapAdd(acc, static_cast<int64_t>(probs[s]) * kv.v[KvVOffset(s, j, d4)]);
      }
      ctx[j] = acc;
    }
    return tpos;
  }

  // Attend for the `queries` query heads that share one KV head (grouped-query attention): query
  // i reads q8 + i*d, uses scales[i], writes ctx + i*d and tpos[i], and has the scratch rows
  // scores/exps/probs + i*slot_stride (slot_stride >= n_slots). One call lets a backend read
  // the KV head once for the whole group.
  virtual void AttendGroup(int64_t queries, const int8_t* q8, const KvHeadView& kv, int64_t n_slots,
                           const Dyadic* scales, int64_t slot_stride, int32_t* scores,
                           int64_t* exps, int32_t* probs, int64_t* ctx, int64_t* tpos) const {
    const int64_t d = kv.head_dim;
    for (int64_t i = 0; i < queries; ++i) {
      tpos[i] = Attend(q8 + i * d, kv, n_slots, scales[i], scores + i * slot_stride,
                       exps + i * slot_stride, probs + i * slot_stride, ctx + i * d);
    }
  }
};

}  // namespace dv
