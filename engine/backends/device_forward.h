// The IntQwen3 forward pass (engine/model.cc) as a program for a device that holds the weights'
// constants, the activations and the K/V cache in its own memory: the cuda backend's resident
// decode. Each step between two GEMMs is one launch of a block program per work item (a token,
// a token's head, a token's query head), built from the block row operations
// (engine/backends/block_row_ops.h) and so from the operators themselves; nothing returns to
// the host between the embedding and the logits but the GEMMs' launches.
//
// The program is written once over an executor, Exec, which supplies memory, copies, the GEMMs
// and the launches:
//   void* Alloc(size_t bytes)             zero-filled memory the steps can reach; Free(void*)
//   void Upload(void* dst, const void* src, size_t bytes), Download(...) (host <-> executor)
//   void Zero(void* dst, size_t bytes)
//   std::unique_ptr<PackedWeight> Pack(const int8_t* w8t, int64_t k, int64_t n)
//       w8t [k, n] row-major, copied: the executor keeps no pointer into it after the call
//   void Gemm(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c)
//       c[m, Pad4(n)] = a[m, Pad4(k)] * W, row strides Pad4(k) and Pad4(n) (cuBLASLt's TN form)
//   int64_t GemmRows(int64_t m)           rows to allocate for a GEMM operand of m rows
//   template <class Step> void Launch(int64_t items, const Step& step)
//       step(block, item) for every item, each on one block of threads
//   template <class F> void Run(int64_t tokens, int64_t gathered, F enqueue)
//       enqueue() once, or a replay of what it enqueued for the same (tokens, gathered) before
//       (a CUDA graph); Forget() drops every such recording (the buffers moved)
//   void Finish()                          waits for everything launched
// The cuda backend's executor runs on a GPU (engine/backends/cuda_forward.cu); the host
// emulation (tests/engine/test_device_forward.cc) runs every block on HostBlock, so this file's
// indexing and data flow are tested bit for bit against IntQwen3 on any machine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "base/check.h"
#include "engine/backends/block_row_ops.h"
#include "engine/model.h"

namespace dv::device {

DV_INLINE constexpr int64_t Pad4(int64_t n) { return (n + 3) / 4 * 4; }

// n / d for n >= 0, d > 0 through DivideBySteps: a step's item index split by a runtime count
// without the device's float-assisted division (engine/intmath.h).
DV_INLINE constexpr int64_t Quotient(int64_t n, int64_t d) {
  uint64_t r = 0;
  return static_cast<int64_t>(
      DivideBySteps(static_cast<uint64_t>(n), static_cast<uint64_t>(d), &r));
}

// Event counters of one forward call (WrapEvents, and the divisions by zero that make it fail).
enum Counter : int { kWrapsQ, kWrapsDown, kWrapsOther, kZeroK, kZeroV, kZeroExp, kCounters };

DV_INLINE void Count(int64_t* counters, int which) {
#if defined(__CUDA_ARCH__)
  atomicAdd(reinterpret_cast<unsigned long long*>(counters + which), 1ull);
#else
  ++counters[which];  // the host emulation runs one block at a time
#endif
}

// One layer's integer constants in executor memory (LayerWeights' vectors; scalars by value).
struct Layer {
  const int64_t *q_m, *k_m, *v_m, *o_m, *gate_m, *up_m, *down_m;
  int64_t q_k, k_k, v_k, o_k, gate_k, up_k, down_k;
  const int64_t *q_norm_m, *k_norm_m;
  int64_t q_norm_k, k_norm_k;
  const int64_t *as_m, *ms_m, *ds_m, *os_m, *qs_m;
  int64_t as_k, ms_k, ds_k, os_k, qs_k;
  const int64_t *kq_m, *kq_k, *ks_m, *ks_k, *vq_m, *vq_k;
  const int64_t* attn_out_col_m;
  int64_t attn_out_col_k, k_rowk;
};

// Everything a step reads or writes, in executor memory, with the shape. Passed by value to every
// launch.
struct Tensors {
  // Shape.
  int64_t hidden, nq, nkv, d, inter, vocab, group;
  bool qk_norm;
  // Model constants.
  const int8_t* embed_e8;  // [V, H]
  const int64_t *embed_m, *embed_k;
  const int16_t *rope_cos, *rope_sin;  // [max_pos, d]
  // Per token of the call: id, position, the row cache's K and V regions and head size.
  const int64_t* token;  // [M, kTokenFields]
  // Residual [M, H] and its shifts.
  int32_t* h;
  int64_t* k_res;
  // GEMM inputs [M, Pad4(k)] and their row scales.
  int8_t* x8;
  int64_t *xm, *xk;
  // GEMM outputs. q, k and v are one GEMM's row (stride qkv_stride, k and v at multiples of 4),
  // gate and up another's (gate_up_stride); po (o and down) has stride Pad4(hidden).
  int32_t *pq, *pk, *pv, *po, *pg, *pu;
  int64_t qkv_stride, gate_up_stride;
  // Q heads [M, nq*d], their scales [M, nq], attention output [M, nq*d].
  int8_t* q8;
  int64_t *qm, *qk;
  int64_t* ctx;
  // Per-item scratch (row stride `scratch_stride`), attention scratch (row stride `slots`).
  int32_t* y32;
  int64_t *y64, *s64;
  int64_t scratch_stride;
  int32_t *scores, *probs;
  int64_t* exps;
  int64_t slots;
  int64_t* counters;  // [kCounters]
};

// Fields of Tensors::token.
enum TokenField : int { kTokId, kTokPos, kTokK, kTokV, kTokHeadBytes, kTokenFields };

DV_INLINE const int64_t* TokenOf(const Tensors& t, int64_t token) {
  return t.token + token * kTokenFields;
}

// Thread 0 stores token tok's new row scale and counts a wrap of its quantization at `site`.
template <typename Block>
DV_INLINE void StoreRowScale(Block& b, const Tensors& t, int64_t tok, Dyadic s, bool wrapped,
                             int site) {
  block::One(b, [&] {
    t.xm[tok] = s.m;
    t.xk[tok] = s.k;
    if (wrapped) Count(t.counters, site);
  });
}

// Embedding (SPEC §5.2): h = renorm(e8[id] * m[id]) at 2^-k[id]. Item: token.
struct EmbedStep {
  Tensors t;
  template <typename Block>
  DV_INLINE void operator()(Block& b, int64_t tok) const {
    const int64_t id = TokenOf(t, tok)[kTokId];
    const int64_t k = block::FromDelta(b, t.embed_e8 + id * t.hidden, t.hidden, t.embed_m[id],
                                       t.embed_k[id], t.h + tok * t.hidden);
    block::One(b, [&] { t.k_res[tok] = k; });
  }
};

// RMSNorm of the residual, optional smoothing, per-token int8 (IntQwen3::NormQuant). Item: token.
struct NormQuantStep {
  Tensors t;
  const int64_t* smooth_m;  // or null
  int64_t smooth_k;
  template <typename Block>
  DV_INLINE void operator()(Block& b, int64_t tok) const {
    const int64_t n = t.hidden;
    int32_t* y32 = t.y32 + tok * t.scratch_stride;
    int64_t* y64 = t.y64 + tok * t.scratch_stride;
    block::RmsNorm(b, t.h + tok * n, n, static_cast<const int64_t*>(nullptr), y32);
    if (smooth_m != nullptr) {
      block::MulColumns(b, y32, smooth_m, n, y64);
    } else {
      block::Copy(b, y32, n, y64);
    }
    bool wrapped = false;
    const Dyadic q = block::QuantI8(b, y64, n, 1, WrapAdd(kNormOutFracBits, smooth_k),
                                    t.x8 + tok * Pad4(n), &wrapped);
    StoreRowScale(b, t, tok, q, wrapped, kWrapsOther);
  }
};

// The Q/K head pipeline into q8 and the row's K/V cache (IntQwen3::QkvHeads). Item: token *
// (nq + nkv) + head, q heads first.
struct QkvHeadStep {
  Tensors t;
  Layer L;
  int64_t layer;
  // One head's product p (scale row k + weight k = pk) requantized to 16 bits, QK-Norm with
  // gamma (or kept), RoPE: y64. Returns the requant's row k (pk - its shift).
  template <typename Block>
  DV_INLINE int64_t HeadIntoRope(Block& b, const int32_t* p, const int64_t* col_m, int64_t pk,
                                 const int64_t* gamma, const int16_t* cos_row,
                                 const int16_t* sin_row, int32_t* y32, int64_t* y64) const {
    const int64_t d = t.d;
    const int64_t sh = block::RequantI32(b, p, col_m, d, 16, y32);
    if (t.qk_norm) {
      block::RmsNorm(b, y32, d, gamma, y64);
    } else {
      block::Copy(b, y32, d, y64);
    }
    block::Rope(b, y64, d, cos_row, sin_row);
    return WrapSub(pk, sh);
  }

  template <typename Block>
  DV_INLINE void operator()(Block& b, int64_t item) const {
    const int64_t heads = t.nq + t.nkv, tok = Quotient(item, heads), head = item - tok * heads;
    const int64_t d = t.d;
    const int64_t* info = TokenOf(t, tok);
    const int64_t pos = info[kTokPos], xm = t.xm[tok], xk = t.xk[tok];
    const int16_t* cos_row = t.rope_cos + pos * d;
    const int16_t* sin_row = t.rope_sin + pos * d;
    int32_t* y32 = t.y32 + item * d;  // one head of scratch per item
    int64_t* y64 = t.y64 + item * d;
    if (head < t.nq) {
      const int64_t h = head, kvh = Quotient(h, t.group), at = tok * t.nq * d + h * d;
      const int64_t row_k =
          HeadIntoRope(b, t.pq + tok * t.qkv_stride + h * d, L.q_m + h * d, WrapAdd(xk, L.q_k),
                       L.q_norm_m, cos_row, sin_row, y32, y64);
      block::MulColumns(b, y64, L.qs_m + kvh * d, d, y64);
      bool wrapped = false;
      const int64_t q_quant_k = WrapAdd(WrapAdd(kNormOutFracBits, L.q_norm_k), L.qs_k);
      const Dyadic q =
          t.qk_norm ? block::QuantI8(b, y64, d, 1, q_quant_k, t.q8 + at, &wrapped)
                    : block::QuantI8(b, y64, d, xm, WrapAdd(row_k, L.qs_k), t.q8 + at, &wrapped);
      block::One(b, [&] {
        t.qm[tok * t.nq + h] = q.m;
        t.qk[tok * t.nq + h] = q.k;
        if (wrapped) Count(t.counters, kWrapsQ);
      });
      return;
    }
    const int64_t h = head - t.nq, at = tok * t.qkv_stride + h * d;
    const int64_t row_k = HeadIntoRope(b, t.pk + at, L.k_m + h * d, WrapAdd(xk, L.k_k), L.k_norm_m,
                                       cos_row, sin_row, y32, y64);
    const int64_t k_row_m = t.qk_norm ? 1 : xm, k_row_k = t.qk_norm ? L.k_rowk : row_k;
    const int64_t v_shift = WrapSub(WrapAdd(xk, L.v_k), L.vq_k[h]);
    block::One(b, [&] {
      if (!t.qk_norm && AnyStaticDenominatorZero(k_row_k, L.kq_m + h * d, L.kq_k + h * d, d)) {
        Count(t.counters, kZeroK);
      }
      if (StaticDenominator(L.vq_m[h], v_shift) == 0) Count(t.counters, kZeroV);
    });
    // Straight into the row's cache slot `pos` of (layer, h), in the decode layout.
    const int64_t d4 = KvPaddedDim(d);
    const int64_t region = (layer * t.nkv + h) * info[kTokHeadBytes];
    auto* kc = reinterpret_cast<int8_t*>(info[kTokK]) + region;
    auto* vc = reinterpret_cast<int8_t*>(info[kTokV]) + region;
    block::RequantI8StaticColumns(b, y64, d, k_row_m, k_row_k, L.kq_m + h * d, L.kq_k + h * d,
                                  [&](int64_t j, int8_t v) { kc[KvKOffset(pos, j, d4)] = v; });
    block::RequantI8StaticRow(b, t.pv + at, d, xm, xk, L.v_m + h * d, L.v_k, L.vq_m[h], L.vq_k[h],
                              [&](int64_t j, int8_t v) { vc[KvVOffset(pos, j, d4)] = v; });
  }
};

// Attention of one (token, q head) over its row's slots 0..pos (IntQwen3::Attention). Item:
// token * nq + head; scratch row item - first.
struct AttendStep {
  Tensors t;
  Layer L;
  int64_t layer, first;
  template <typename Block>
  DV_INLINE void operator()(Block& b, int64_t item) const {
    const int64_t tok = Quotient(item, t.nq), h = item - tok * t.nq, kvh = Quotient(h, t.group);
    const int64_t d = t.d;
    const int64_t* info = TokenOf(t, tok);
    const int64_t region = (layer * t.nkv + kvh) * info[kTokHeadBytes];
    const KvHeadView kv{reinterpret_cast<const int8_t*>(info[kTokK]) + region,
                        reinterpret_cast<const int8_t*>(info[kTokV]) + region, d};
    const Dyadic scale =
        NormScale(WrapMul(t.qm[item], L.ks_m[kvh]), WrapAdd(t.qk[item], L.ks_k[kvh]));
    block::One(b, [&] {
      if (DiExpDivisor(scale.m) == 0) Count(t.counters, kZeroExp);
    });
    const int64_t row = (item - first) * t.slots;
    block::Attend(b, t.q8 + item * d, kv, info[kTokPos] + 1, scale, t.scores + row, t.exps + row,
                  t.probs + row, t.ctx + item * d);
  }
};

// The o-projection's input: ctx * os_m requantized per token against the per-head V scales.
// Item: token.
struct OutInputStep {
  Tensors t;
  Layer L;
  template <typename Block>
  DV_INLINE void operator()(Block& b, int64_t tok) const {
    const int64_t qd = t.nq * t.d;
    int64_t* y64 = t.y64 + tok * t.scratch_stride;
    block::MulColumns(b, t.ctx + tok * qd, L.os_m, qd, y64);
    bool wrapped = false;
    const Dyadic a =
        block::RequantI8RowColumn(b, y64, L.attn_out_col_m, qd, 1, L.os_k, L.attn_out_col_k,
                                  t.s64 + tok * t.scratch_stride, t.x8 + tok * Pad4(qd), &wrapped);
    StoreRowScale(b, t, tok, a, wrapped, kWrapsOther);
  }
};

// A projection (o or down, in po) requantized to 20 bits and added into the residual
// (IntQwen3::AddToResidual). Item: token.
struct ResidualStep {
  Tensors t;
  const int64_t* m;
  int64_t k;
  template <typename Block>
  DV_INLINE void operator()(Block& b, int64_t tok) const {
    const int64_t n = t.hidden, xm = t.xm[tok], xk = t.xk[tok], k_res = t.k_res[tok];
    int32_t* y32 = t.y32 + tok * t.scratch_stride;
    const int64_t sh = block::RequantI32(b, t.po + tok * Pad4(n), m, n, 20, y32);
    const int64_t dk = WrapSub(WrapAdd(xk, k), sh);
    const int64_t k_new = block::AddResidual(b, t.h + tok * n, n, k_res, y32, xm, dk);
    block::One(b, [&] { t.k_res[tok] = k_new; });
  }
};

// gate/up to 14 bits, SwiGLU, down-input smoothing and per-token int8 (IntQwen3::MlpBlock).
// Item: token.
struct MlpStep {
  Tensors t;
  Layer L;
  template <typename Block>
  DV_INLINE void operator()(Block& b, int64_t tok) const {
    const int64_t n = t.inter, xm = t.xm[tok], xk = t.xk[tok];
    int32_t* g = t.pg + tok * t.gate_up_stride;
    int32_t* u = t.pu + tok * t.gate_up_stride;
    int64_t* y64 = t.y64 + tok * t.scratch_stride;
    const int64_t gk = WrapSub(WrapAdd(xk, L.gate_k), block::RequantI32(b, g, L.gate_m, n, 14, g));
    const int64_t uk = WrapSub(WrapAdd(xk, L.up_k), block::RequantI32(b, u, L.up_m, n, 14, u));
    const int64_t tpos = DiExpTpos(xm, gk);
    block::Swiglu(b, g, u, n, tpos, y64);
    const int64_t sw_m = WrapMul(xm, xm);
    const int64_t din_k = WrapAdd(WrapAdd(WrapAdd(gk, uk), kSigmoidFracBits), L.ds_k);
    block::MulColumns(b, y64, L.ds_m, n, y64);
    bool wrapped = false;
    const Dyadic q = block::QuantI8(b, y64, n, sw_m, din_k, t.x8 + tok * Pad4(n), &wrapped);
    StoreRowScale(b, t, tok, q, wrapped, kWrapsDown);
  }
};

// Copies the int8 rows of the tokens whose logits are wanted into a contiguous LM-head input.
// Item: output row.
struct GatherStep {
  const int8_t* x8;
  int8_t* out;
  const int64_t* tokens;
  int64_t stride;
  template <typename Block>
  DV_INLINE void operator()(Block& b, int64_t row) const {
    const int8_t* src = x8 + tokens[row] * stride;
    block::ForEach(b, stride, [&](int64_t i) { out[row * stride + i] = src[i]; });
    b.Sync();
  }
};

// Two steps of the same item as one launch: `first`, then (after a barrier) `second`. The pass
// joins a step with the next where both take a token: the embedding or a residual update with
// the RMSNorm and int8 of the GEMM input that follows it.
template <typename First, typename Second>
struct Then {
  First first;
  Second second;
  template <typename Block>
  DV_INLINE void operator()(Block& b, int64_t item) const {
    first(b, item);
    b.Sync();
    second(b, item);
  }
};

// A step launched over [0, n) that runs `step` on items first + i (a chunk of a longer list).
template <typename Step>
struct Offset {
  Step step;
  int64_t first;
  template <typename Block>
  DV_INLINE void operator()(Block& b, int64_t i) const {
    step(b, first + i);
  }
};

// The program over an executor (see the top of this file). Not thread-safe; one forward call
// at a time.
template <typename Exec>
class DeviceForward {
 public:
  // weights (and what it borrows) must outlive the program; the K/V caches handed to Forward
  // must live in memory the executor's steps reach.
  DeviceForward(const ModelWeights& w, Exec& exec) : w_(w), exec_(exec) {
    const ModelConfig& c = w.config;
    auto up = [&](const auto& v) { return Upload(v.data(), v.size()); };
    embed_e8_ = Upload(w.embed_e8, static_cast<size_t>(c.vocab * c.hidden));
    embed_m_ = up(w.embed_m);
    embed_k_ = up(w.embed_k);
    rope_cos_ = up(w.rope_cos);
    rope_sin_ = up(w.rope_sin);
    for (const LayerWeights& l : w.layers) {
      Layer d{};
      d.q_m = up(l.q.m), d.k_m = up(l.k.m), d.v_m = up(l.v.m), d.o_m = up(l.o.m);
      d.gate_m = up(l.gate.m), d.up_m = up(l.up.m), d.down_m = up(l.down.m);
      d.q_k = l.q.k, d.k_k = l.k.k, d.v_k = l.v.k, d.o_k = l.o.k;
      d.gate_k = l.gate.k, d.up_k = l.up.k, d.down_k = l.down.k;
      d.q_norm_m = up(l.q_norm_m), d.k_norm_m = up(l.k_norm_m);
      d.q_norm_k = l.q_norm_k, d.k_norm_k = l.k_norm_k;
      d.as_m = up(l.as_m), d.ms_m = up(l.ms_m), d.ds_m = up(l.ds_m), d.os_m = up(l.os_m);
      d.qs_m = up(l.qs_m);
      d.as_k = l.as_k, d.ms_k = l.ms_k, d.ds_k = l.ds_k, d.os_k = l.os_k, d.qs_k = l.qs_k;
      d.kq_m = up(l.kq_m), d.kq_k = up(l.kq_k), d.ks_m = up(l.ks_m), d.ks_k = up(l.ks_k);
      d.vq_m = up(l.vq_m), d.vq_k = up(l.vq_k);
      d.attn_out_col_m = up(l.attn_out_col_m);
      d.attn_out_col_k = l.attn_out_col_k, d.k_rowk = l.k_rowk;
      layers_.push_back(d);
      Packed p;
      auto pack = [&](const LinearWeights& lw) { return exec_.Pack(lw.w8t, lw.in, lw.out); };
      p.qkv = PackStacked({&l.q, &l.k, &l.v});
      p.o = pack(l.o);
      p.gate_up = PackStacked({&l.gate, &l.up});
      p.down = pack(l.down);
      packed_.push_back(std::move(p));
    }
    head_ = exec_.Pack(w.head_w8t, c.hidden, c.vocab);
  }

  ~DeviceForward() {
    exec_.Finish();
    for (void* p : buffers_) exec_.Free(p);
    for (void* p : owned_) exec_.Free(p);
  }
  DeviceForward(const DeviceForward&) = delete;
  DeviceForward& operator=(const DeviceForward&) = delete;

  // IntQwen3::Forward's contract (engine/model.h) without a trace, for rows it has checked
  // (ResidentForward); the rows' caches must be the executor's. Adds the call's wrap events to
  // *wraps.
  void Forward(std::span<ForwardRow> rows, WrapEvents* wraps) {
    const ModelConfig& c = w_.config;
    int64_t tokens = 0, max_slots = 1;
    std::vector<int64_t>& info = token_info_;
    info.clear();
    for (const ForwardRow& r : rows) {
      for (int64_t i = 0; i < r.n_tokens; ++i) {
        info.insert(info.end(),
                    {r.ids[i], r.cache->length() + i,
                     static_cast<int64_t>(reinterpret_cast<intptr_t>(r.cache->k_data())),
                     static_cast<int64_t>(reinterpret_cast<intptr_t>(r.cache->v_data())),
                     r.cache->head_bytes()});
      }
      tokens += r.n_tokens;
      // Scratch for the cache's capacity, so a decode loop keeps its buffers (and graphs).
      max_slots = std::max(max_slots, r.cache->capacity());
    }
    Ensure(tokens, max_slots, static_cast<int64_t>(rows.size()));
    Tensors t = tensors_;
    exec_.Upload(token_, info.data(), info.size() * sizeof(int64_t));
    exec_.Zero(counters_, kCounters * sizeof(int64_t));
    const int64_t M = tokens, H = c.hidden;

    // The LM head's rows: every token of a row with all_logits, the last one of a row with
    // last_logits only.
    std::vector<int64_t>& want = want_tokens_;
    want.clear();
    int64_t t0 = 0;
    for (const ForwardRow& r : rows) {
      if (r.all_logits != nullptr) {
        for (int64_t i = 0; i < r.n_tokens; ++i) want.push_back(t0 + i);
      } else if (r.last_logits != nullptr) {
        want.push_back(t0 + r.n_tokens - 1);
      }
      t0 += r.n_tokens;
    }
    const auto G = static_cast<int64_t>(want.size());
    if (G > 0) exec_.Upload(want_, want.data(), want.size() * sizeof(int64_t));

    // A layer is four GEMMs (q/k/v stacked, o, gate/up stacked, down) and six launches; the
    // RMSNorm and int8 of each GEMM input run in the launch that made the residual (or the
    // embedding) it reads. The next layer's input smoothing, or none before the LM head:
    const auto input_norm = [&](int64_t layer) {
      if (layer >= c.n_layers) return NormQuantStep{t, nullptr, 0};
      const Layer& L = layers_[static_cast<size_t>(layer)];
      return NormQuantStep{t, L.as_m, L.as_k};
    };
    exec_.Run(M, G, [&] {
      exec_.Launch(M, Then<EmbedStep, NormQuantStep>{EmbedStep{t}, input_norm(0)});
      for (int64_t layer = 0; layer < c.n_layers; ++layer) {
        const Layer& L = layers_[static_cast<size_t>(layer)];
        const Packed& P = packed_[static_cast<size_t>(layer)];
        exec_.Gemm(t.x8, M, *P.qkv, t.pq);
        exec_.Launch(M * (c.n_q_heads + c.n_kv_heads), QkvHeadStep{t, L, layer});
        for (int64_t first = 0; first < M * c.n_q_heads; first += attend_items_) {
          const int64_t n = std::min(attend_items_, M * c.n_q_heads - first);
          exec_.Launch(n, Offset<AttendStep>{AttendStep{t, L, layer, first}, first});
        }
        exec_.Launch(M, OutInputStep{t, L});
        exec_.Gemm(t.x8, M, *P.o, t.po);
        exec_.Launch(M, Then<ResidualStep, NormQuantStep>{ResidualStep{t, L.o_m, L.o_k},
                                                          NormQuantStep{t, L.ms_m, L.ms_k}});
        exec_.Gemm(t.x8, M, *P.gate_up, t.pg);
        exec_.Launch(M, MlpStep{t, L});
        exec_.Gemm(t.x8, M, *P.down, t.po);
        exec_.Launch(M, Then<ResidualStep, NormQuantStep>{ResidualStep{t, L.down_m, L.down_k},
                                                          input_norm(layer + 1)});
      }
      if (G == M) {
        // Every token's logits (a decode call): the LM head reads the final rows where they
        // are. G == M holds for every call of a recorded shape, and then want is 0..M-1.
        exec_.Gemm(t.x8, G, *head_, head_logits_);
      } else if (G > 0) {
        exec_.Launch(G, GatherStep{t.x8, head_x8_, want_, Pad4(H)});
        exec_.Gemm(head_x8_, G, *head_, head_logits_);
      }
    });
    // One copy back (on a GPU, the call's one wait for the device): the counters, the tokens'
    // final scales and the wanted logits rows (Pad4(V) apart) lie in one results buffer.
    const int64_t ld = Pad4(c.vocab);
    std::vector<unsigned char>& out = results_host_;
    out.resize(static_cast<size_t>(logits_at_ + G * ld * static_cast<int64_t>(sizeof(int32_t))));
    exec_.Download(out.data(), results_, out.size());
    int64_t counts[kCounters] = {};
    std::memcpy(counts, out.data(), sizeof(counts));
    ThrowIfDividedByZero(counts[kZeroK], counts[kZeroV], counts[kZeroExp]);
    const unsigned char* xm = out.data() + xm_at_;
    const unsigned char* xk = out.data() + xk_at_;
    const unsigned char* g = out.data() + logits_at_;
    const auto row_bytes = static_cast<size_t>(c.vocab) * sizeof(int32_t);
    const auto ld_bytes = static_cast<size_t>(ld) * sizeof(int32_t);
    t0 = 0;
    for (ForwardRow& r : rows) {
      const auto scale_bytes = static_cast<size_t>(r.n_tokens) * sizeof(int64_t);
      const auto at = static_cast<size_t>(t0) * sizeof(int64_t);
      if (r.all_scale_m) std::memcpy(r.all_scale_m, xm + at, scale_bytes);
      if (r.all_scale_k) std::memcpy(r.all_scale_k, xk + at, scale_bytes);
      if (r.all_logits != nullptr) {
        for (int64_t i = 0; i < r.n_tokens; ++i, g += ld_bytes) {
          std::memcpy(r.all_logits + i * c.vocab, g, row_bytes);
        }
        if (r.last_logits) {
          std::copy_n(r.all_logits + (r.n_tokens - 1) * c.vocab, c.vocab, r.last_logits);
        }
      } else if (r.last_logits != nullptr) {
        std::memcpy(r.last_logits, g, row_bytes);
        g += ld_bytes;
      }
      t0 += r.n_tokens;
    }
    for (ForwardRow& r : rows) r.cache->Advance(r.n_tokens);
    wraps->q_quant += counts[kWrapsQ];
    wraps->down_input += counts[kWrapsDown];
    wraps->other += counts[kWrapsOther];
  }

  // Attention items per launch (their scratch is items x slots x 16 bytes); the buffers are
  // made again at the next call.
  void set_attend_items(int64_t n) {
    attend_items_ = std::max<int64_t>(n, 1);
    cap_tokens_ = 0;
  }

 private:
  struct Packed {
    std::unique_ptr<PackedWeight> qkv, o, gate_up, down;
  };

  // The column layout of a stacked GEMM (the weights of GEMMs that share their input side by
  // side): part i of `outs` output columns starts at starts[i], a multiple of 4 (cuBLASLt's
  // alignment of a row of int32 outputs, 16 bytes), zero columns between; `width` columns in all.
  // The one definition PackStacked lays the weights out by and Ensure points into the outputs by.
  struct Stacked {
    std::vector<int64_t> starts;
    int64_t width = 0;
  };
  static Stacked StackedLayout(std::span<const int64_t> outs) {
    Stacked l;
    for (const int64_t o : outs) {
      l.starts.push_back(l.width);
      l.width += Pad4(o);
    }
    return l;
  }

  // One [k, width] matrix from GEMMs that share their input (and inner dimension), laid out by
  // StackedLayout: one GEMM instead of several, whose products are each part's exactly (an int32
  // dot product per column, the columns independent; no sum can saturate, as K * 127 * 128 <
  // 2^31 is checked per weight).
  std::unique_ptr<PackedWeight> PackStacked(std::initializer_list<const LinearWeights*> parts) {
    const int64_t k = (*parts.begin())->in;
    std::vector<int64_t> outs;
    for (const LinearWeights* p : parts) {
      DV_CHECK(p->in == k) << "stacked weights of inner dimensions " << k << " and " << p->in;
      outs.push_back(p->out);
    }
    const Stacked layout = StackedLayout(outs);
    const int64_t n = layout.width;
    std::vector<int8_t> w(static_cast<size_t>(k * n), 0);
    size_t part = 0;
    for (const LinearWeights* p : parts) {
      const int64_t at = layout.starts[part++];
      for (int64_t i = 0; i < k; ++i) {
        std::copy_n(p->w8t + i * p->out, p->out, w.begin() + i * n + at);
      }
    }
    return exec_.Pack(w.data(), k, n);
  }

  // Executor memory for n T, owned by the program (constants) or by the current set of
  // activation buffers (freed when Ensure replaces them).
  template <typename T>
  T* Alloc(int64_t n, std::vector<void*>* owner = nullptr) {
    void* p = exec_.Alloc(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(T));
    (owner != nullptr ? owner : &owned_)->push_back(p);
    return static_cast<T*>(p);
  }
  template <typename T>
  T* Buffer(int64_t n) {
    return Alloc<T>(n, &buffers_);
  }
  template <typename T>
  const T* Upload(const T* src, size_t n) {
    T* p = Alloc<T>(static_cast<int64_t>(n));
    if (n > 0) exec_.Upload(p, src, n * sizeof(T));
    return p;
  }

  // Sizes every buffer for `tokens` tokens, rows of up to `slots` slots and `rows` rows; grows
  // only (the old buffers stay owned until the program goes).
  void Ensure(int64_t tokens, int64_t slots, int64_t rows) {
    const ModelConfig& c = w_.config;
    const int64_t H = c.hidden, qd = c.n_q_heads * c.head_dim, kvd = c.n_kv_heads * c.head_dim;
    const int64_t I = c.intermediate;
    if (tokens <= cap_tokens_ && slots <= cap_slots_ && rows <= cap_rows_) return;
    cap_tokens_ = std::max(cap_tokens_, tokens);
    cap_slots_ = std::max(cap_slots_, slots);
    cap_rows_ = std::max(cap_rows_, rows);
    const int64_t M = cap_tokens_, gm = exec_.GemmRows(M);
    // The old buffers go once nothing queued uses them, and with them every recorded replay.
    exec_.Finish();
    exec_.Forget();
    for (void* p : buffers_) exec_.Free(p);
    buffers_.clear();
    Tensors& t = tensors_;
    t.hidden = H, t.nq = c.n_q_heads, t.nkv = c.n_kv_heads, t.d = c.head_dim;
    t.inter = I, t.vocab = c.vocab, t.group = c.group(), t.qk_norm = c.qk_norm;
    t.embed_e8 = embed_e8_, t.embed_m = embed_m_, t.embed_k = embed_k_;
    t.rope_cos = rope_cos_, t.rope_sin = rope_sin_;
    token_ = Buffer<int64_t>(M * kTokenFields);
    t.token = token_;
    t.h = Buffer<int32_t>(M * H);
    t.k_res = Buffer<int64_t>(M);
    t.x8 = Buffer<int8_t>(gm * Pad4(std::max({H, qd, I})));
    // The results buffer (Forward's one copy back): counters, xm, xk, then the logits rows
    // at a 256-byte boundary (a GEMM output).
    const int64_t gr = exec_.GemmRows(std::max(cap_rows_, M));
    const auto i64 = static_cast<int64_t>(sizeof(int64_t));
    xm_at_ = kCounters * i64;
    xk_at_ = xm_at_ + M * i64;
    logits_at_ = (xk_at_ + M * i64 + 255) / 256 * 256;
    results_ = Buffer<unsigned char>(logits_at_ +
                                     gr * Pad4(c.vocab) * static_cast<int64_t>(sizeof(int32_t)));
    counters_ = reinterpret_cast<int64_t*>(results_);
    t.xm = reinterpret_cast<int64_t*>(results_ + xm_at_);
    t.xk = reinterpret_cast<int64_t*>(results_ + xk_at_);
    head_logits_ = reinterpret_cast<int32_t*>(results_ + logits_at_);
    // The stacked GEMMs' outputs (PackStacked): q | k | v and gate | up in one row each.
    const int64_t qkv_outs[] = {qd, kvd, kvd}, gate_up_outs[] = {I, I};
    const Stacked qkv = StackedLayout(qkv_outs), gate_up = StackedLayout(gate_up_outs);
    t.qkv_stride = qkv.width;
    t.pq = Buffer<int32_t>(gm * t.qkv_stride);
    t.pk = t.pq + qkv.starts[1];
    t.pv = t.pq + qkv.starts[2];
    t.po = Buffer<int32_t>(gm * Pad4(H));
    t.gate_up_stride = gate_up.width;
    t.pg = Buffer<int32_t>(gm * t.gate_up_stride);
    t.pu = t.pg + gate_up.starts[1];
    t.q8 = Buffer<int8_t>(M * qd);
    t.qm = Buffer<int64_t>(M * c.n_q_heads);
    t.qk = Buffer<int64_t>(M * c.n_q_heads);
    t.ctx = Buffer<int64_t>(M * qd);
    // Per-item scratch: a token's widest row, or one head of a (token, head) item.
    t.scratch_stride = std::max({H, qd, I});
    const int64_t scratch = std::max(M * t.scratch_stride, M * (qd + kvd));
    t.y32 = Buffer<int32_t>(scratch);
    t.y64 = Buffer<int64_t>(scratch);
    t.s64 = Buffer<int64_t>(M * t.scratch_stride);
    t.slots = cap_slots_;
    const int64_t attend = std::min(attend_items_, M * c.n_q_heads);
    t.scores = Buffer<int32_t>(attend * t.slots);
    t.probs = Buffer<int32_t>(attend * t.slots);
    t.exps = Buffer<int64_t>(attend * t.slots);
    t.counters = counters_;
    want_ = Buffer<int64_t>(std::max(cap_rows_, M));
    head_x8_ = Buffer<int8_t>(gr * Pad4(H));
  }

  const ModelWeights& w_;
  Exec& exec_;
  std::vector<void*> owned_, buffers_;
  const int8_t* embed_e8_ = nullptr;
  const int64_t *embed_m_ = nullptr, *embed_k_ = nullptr;
  const int16_t *rope_cos_ = nullptr, *rope_sin_ = nullptr;
  std::vector<Layer> layers_;
  std::vector<Packed> packed_;
  std::unique_ptr<PackedWeight> head_;
  unsigned char* results_ = nullptr;
  int64_t xm_at_ = 0, xk_at_ = 0, logits_at_ = 0;  // byte offsets of the parts of results_
  int64_t* counters_ = nullptr;
  int64_t* token_ = nullptr;
  int64_t* want_ = nullptr;
  int8_t* head_x8_ = nullptr;
  int32_t* head_logits_ = nullptr;
  Tensors tensors_{};
  int64_t cap_tokens_ = 0, cap_slots_ = 0, cap_rows_ = 0;
  int64_t attend_items_ = 4096;
  std::vector<int64_t> token_info_, want_tokens_;
  std::vector<unsigned char> results_host_;
};

}  // namespace dv::device
