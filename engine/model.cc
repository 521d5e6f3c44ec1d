#include "engine/model.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "base/check.h"
#include "engine/intmath.h"
#include "engine/ops/di_rmsnorm.h"
#include "engine/ops/di_swiglu.h"

namespace dv {

namespace {

using ProfileClock = std::chrono::steady_clock;

int64_t NanosecondsSince(ProfileClock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(ProfileClock::now() - t0).count();
}

size_t Sz(int64_t n) { return static_cast<size_t>(n); }

}  // namespace

KvCache::KvCache(const ModelConfig& config, int64_t capacity, Backend& backend)
    : n_kv_(config.n_kv_heads),
      head_dim_(config.head_dim),
      capacity_(capacity),
      head_bytes_(KvPaddedSlots(capacity) * KvPaddedDim(config.head_dim)),
      k_(backend.AllocateKvStorage(Sz(config.n_layers * n_kv_ * head_bytes_))),
      v_(backend.AllocateKvStorage(Sz(config.n_layers * n_kv_ * head_bytes_))) {}

void KvCache::Write(int64_t layer, int64_t kv_head, int64_t slot, const int8_t* k8,
                    const int8_t* v8) {
  const int64_t d4 = KvPaddedDim(head_dim_);
  int8_t* k = K() + Offset(layer, kv_head) + KvKOffset(slot, 0, d4);
  int8_t* v = V() + Offset(layer, kv_head) + KvVOffset(slot, 0, d4);
  // K: channels 4j..4j+3 are adjacent, groups 64 bytes apart; V: channels 4 bytes apart.
  const int64_t whole = head_dim_ / 4 * 4;
  for (int64_t j = 0; j < whole; j += 4) std::memcpy(k + j * 16, k8 + j, 4);
  for (int64_t j = whole; j < head_dim_; ++j) k[whole * 16 + j % 4] = k8[j];
  for (int64_t j = 0; j < head_dim_; ++j) v[j * 4] = v8[j];
}

struct IntQwen3::PackedLayer {
  std::unique_ptr<PackedWeight> q, k, v, o, gate, up, down;
};

// Per-thread scratch: one row's temporaries, sized for the largest row of any step.
struct ThreadScratch {
  std::vector<int32_t> y32;
  std::vector<int64_t> y64, s64, exps;
  std::vector<int32_t> scores, probs;  // [group, max_slots], like exps
  std::vector<Dyadic> scales;          // [group] the attention scales of one KV group
  std::vector<int64_t> tpos;           // [group]
  std::vector<int8_t> k8, v8;          // [d] one cache slot of one KV head
  // Wrap events by site (WrapEvents): W1, W2, and the bounded quantizations.
  WrapCounter wraps_q, wraps_down, wraps_other;
  // Divisions by zero (docs/SPEC.md §2.3), which only wrapped scales reach: a V-cache
  // denominator vq_m << shift, a DI-Exp divisor m_f of an attention row.
  int64_t zero_v_denominators = 0, zero_k_denominators = 0, zero_exp_divisors = 0;
};

// Buffers for one forward call of `tokens` tokens (grow-only, so steady decode allocates nothing).
struct IntQwen3::Workspace {
  int64_t tokens = 0;
  std::vector<KvCache*> cache;       // [M] the row cache of each token
  std::vector<int64_t> pos;          // [M] absolute position (= cache slot)
  std::vector<int32_t> ids;          // [M]
  std::vector<int32_t> h;            // [M, H] residual
  std::vector<int64_t> k_res;        // [M]
  std::vector<int8_t> x8;            // [M, max(H, Q*d, I)]
  std::vector<int64_t> xm, xk;       // [M]
  std::vector<int32_t> pq, pk, pv;   // [M, Q*d], [M, KV*d], [M, KV*d]
  std::vector<int8_t> q8;            // [M, Q, d]
  std::vector<int64_t> qm, qk;       // [M, Q]
  std::vector<int64_t> ctx;          // [M, Q*d]
  std::vector<int32_t> po;           // [M, H] (o and down outputs)
  std::vector<int32_t> pg, pu;       // [M, I]
  std::vector<int8_t> head_x8;       // [rows, H] the last token of each row, for the LM head
  std::vector<int32_t> head_logits;  // [rows, V]
  std::vector<int32_t*> head_out;    // [rows] where each gathered row's logits go
  std::vector<ThreadScratch> scratch;
};

IntQwen3::IntQwen3(const ModelWeights& weights, Backend& backend)
    : w_(weights), backend_(backend), ops_(backend.row_ops()), ws_(std::make_unique<Workspace>()) {
  // The artifact loader refuses such shapes and values with an ArtifactError; weights built in
  // code that break a bound are a bug.
  const char* why = CheckShapeBounds(w_.config);
  DV_CHECK(why == nullptr) << why;
  const std::string ranges = CheckValueRanges(w_);
  DV_CHECK(ranges.empty()) << ranges;
  // A backend with its own pass packs the weights its own way; the products below are then
  // needed only for a traced call, and packed at the first.
  resident_ = backend_.MakeResidentForward(w_);
  if (resident_ == nullptr) PackWeights();
}

void IntQwen3::PackWeights() {
  for (const LayerWeights& l : w_.layers) {
    PackedLayer p;
    auto pack = [&](const LinearWeights& lw) { return backend_.PackWeight(lw.w8t, lw.in, lw.out); };
    p.q = pack(l.q);
    p.k = pack(l.k);
    p.v = pack(l.v);
    p.o = pack(l.o);
    p.gate = pack(l.gate);
    p.up = pack(l.up);
    p.down = pack(l.down);
    packed_.push_back(std::move(p));
  }
  head_ = backend_.PackWeight(w_.head_w8t, w_.config.hidden, w_.config.vocab);
}

IntQwen3::~IntQwen3() = default;

void IntQwen3::EnsureWorkspace(int64_t tokens, int64_t max_slots, int64_t rows) {
  const ModelConfig& c = w_.config;
  Workspace& ws = *ws_;
  const int64_t qd = c.n_q_heads * c.head_dim;
  const int64_t kvd = c.n_kv_heads * c.head_dim;
  const int64_t widest = std::max({c.hidden, qd, c.intermediate});
  auto grow = [](auto& v, int64_t n) {
    if (v.size() < Sz(n)) v.resize(Sz(n));
  };
  ws.tokens = tokens;
  grow(ws.cache, tokens);
  grow(ws.pos, tokens);
  grow(ws.ids, tokens);
  grow(ws.h, tokens * c.hidden);
  grow(ws.k_res, tokens);
  grow(ws.x8, tokens * widest);
  grow(ws.xm, tokens);
  grow(ws.xk, tokens);
  grow(ws.pq, tokens * qd);
  grow(ws.pk, tokens * kvd);
  grow(ws.pv, tokens * kvd);
  grow(ws.q8, tokens * qd);
  grow(ws.qm, tokens * c.n_q_heads);
  grow(ws.qk, tokens * c.n_q_heads);
  grow(ws.ctx, tokens * qd);
  grow(ws.po, tokens * c.hidden);
  grow(ws.pg, tokens * c.intermediate);
  grow(ws.pu, tokens * c.intermediate);
  grow(ws.head_x8, rows * c.hidden);
  if (rows > 1) grow(ws.head_logits, rows * c.vocab);
  grow(ws.head_out, rows);
  ws.scratch.resize(Sz(backend_.NumThreads()));
  for (ThreadScratch& s : ws.scratch) {
    grow(s.y32, widest);
    grow(s.y64, widest);
    grow(s.s64, widest);
    // Attention scratch: one row of max_slots per q head of a KV group.
    grow(s.exps, c.group() * max_slots);
    grow(s.scores, c.group() * max_slots);
    grow(s.probs, c.group() * max_slots);
    grow(s.scales, c.group());
    grow(s.tpos, c.group());
    grow(s.k8, c.head_dim);
    grow(s.v8, c.head_dim);
  }
}

void IntQwen3::AnnounceProduct(int64_t layer, int first) const {
  if (layer >= w_.config.n_layers) {
    const PackedWeight* const head[] = {head_.get()};
    backend_.WillMultiply(head);
    return;
  }
  const PackedLayer& P = packed_[Sz(layer)];
  const PackedWeight* const products[][3] = {
      {P.q.get(), P.k.get(), P.v.get()}, {P.o.get()}, {P.gate.get(), P.up.get()}, {P.down.get()}};
  const size_t counts[] = {3, 1, 2, 1};
  backend_.WillMultiply(std::span(products[first], counts[first]));
}

void IntQwen3::Multiply(const int8_t* a, int64_t m, std::span<const PackedWeight* const> w,
                        std::span<int32_t* const> c, bool head) {
  if (profile_ == nullptr) {
    backend_.MatmulI8Fused(a, m, w, c);
    return;
  }
  const auto started = ProfileClock::now();
  backend_.MatmulI8Fused(a, m, w, c);
  const int64_t ns = NanosecondsSince(started);
  int64_t bytes = 0;
  for (const PackedWeight* pw : w) bytes += pw->k * pw->n;
  (head ? profile_->head_ns : profile_->layer_ns) += ns;
  (head ? profile_->head_bytes : profile_->layer_bytes) += bytes;
}

void IntQwen3::Multiply(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c, bool head) {
  const PackedWeight* const ws[] = {&w};
  int32_t* const cs[] = {c};
  Multiply(a, m, ws, cs, head);
}

int32_t IntQwen3::GreedyPick(const int32_t* logits) const {
  return ops_.GreedyPick(logits, w_.head_m.data(), w_.config.vocab);
}

// RMSNorm of the residual, optional per-channel smoothing (dyadic 1/s), per-token int8 quant:
// x8 at row scale (xm, xk) = quant(norm * s_m, 1, 20 + s_k).
void IntQwen3::NormQuant(const std::vector<int64_t>* smooth_m, int64_t smooth_k, int8_t* x8,
                         int64_t* xm, int64_t* xk, const std::string& pre, TraceRecorder& tr) {
  Workspace& ws = *ws_;
  const int64_t hid = w_.config.hidden, M = ws.tokens;
  const int64_t row_k = WrapAdd(kNormOutFracBits, smooth_k);
  const TraceTensor tr_norm = tr.Open(pre, "norm", {M, hid});
  const TraceTensor tr_smooth = smooth_m ? tr.Open(pre, "smooth_y", {M, hid}) : TraceTensor();
  backend_.ParallelFor(M, [&](int64_t begin, int64_t end, int thread) {
    ThreadScratch& s = ws.scratch[Sz(thread)];
    for (int64_t t = begin; t < end; ++t) {
      ops_.RmsNorm(ws.h.data() + t * hid, hid, s.y32.data());
      tr_norm.Put(t * hid, s.y32.data(), hid);
      if (smooth_m) {
        ops_.MulColumns(s.y32.data(), smooth_m->data(), hid, s.y64.data());
        tr_smooth.Put(t * hid, s.y64.data(), hid);
      } else {
        std::copy_n(s.y32.data(), hid, s.y64.data());
      }
      const Dyadic q = ops_.QuantI8(s.y64.data(), hid, 1, row_k, x8 + t * hid, &s.wraps_other);
      xm[t] = q.m;
      xk[t] = q.k;
    }
  });
  if (smooth_m) tr.RecordFill(pre, "smooth_k", {M}, row_k);
  tr.Record(pre, "x8", {M, hid}, x8);
  tr.Record(pre, "xm", {M}, xm);
  tr.Record(pre, "xk", {M}, xk);
}

void IntQwen3::Forward(std::span<ForwardRow> rows, TraceSink* trace) {
  const ModelConfig& c = w_.config;
  // Preconditions: callers (GenerateGreedy, bench, tests) size caches and validate ids first.
  DV_CHECK(!trace || rows.size() == 1) << "a trace needs exactly one row, got " << rows.size();
  int64_t tokens = 0;
  int64_t max_slots = 1;
  for (const ForwardRow& r : rows) {
    DV_CHECK(r.n_tokens > 0) << "a forward row needs at least one token";
    DV_CHECK(r.cache->length() + r.n_tokens <= r.cache->capacity())
        << "K/V cache capacity " << r.cache->capacity() << " exceeded: " << r.cache->length()
        << " + " << r.n_tokens;
    DV_CHECK(r.cache->length() + r.n_tokens <= c.max_pos)
        << "position " << r.cache->length() + r.n_tokens << " beyond max_pos " << c.max_pos;
    DV_CHECK(r.cache->length() + r.n_tokens <= kMaxRowSlots)
        << "a row beyond " << kMaxRowSlots
        << " slots, where a softmax sum could leave int64 (docs/SPEC.md §6.4)";
    for (int64_t i = 0; i < r.n_tokens; ++i) {
      DV_CHECK(r.ids[i] >= 0 && r.ids[i] < c.vocab)
          << "token id " << r.ids[i] << ", vocabulary " << c.vocab;
    }
    tokens += r.n_tokens;
    // Scratch is sized for the cache's capacity, so a decode loop allocates nothing after its
    // first call.
    max_slots = std::max(max_slots, r.cache->capacity());
  }
  // Every row is checked: the resident pass (and the host path below) take them as they are.
  if (resident_ != nullptr && trace == nullptr) {
    resident_->Forward(rows, &wraps_);
    return;
  }
  if (head_ == nullptr) PackWeights();
  EnsureWorkspace(tokens, max_slots, static_cast<int64_t>(rows.size()));
  const auto started = profile_ != nullptr ? ProfileClock::now() : ProfileClock::time_point();
  Workspace& ws = *ws_;
  {
    int64_t t = 0;
    for (const ForwardRow& r : rows) {
      for (int64_t i = 0; i < r.n_tokens; ++i, ++t) {
        ws.cache[Sz(t)] = r.cache;
        ws.pos[Sz(t)] = r.cache->length() + i;
        ws.ids[Sz(t)] = r.ids[i];
      }
    }
  }
  TraceRecorder tr(trace);
  tr.RecordInputs(w_, ws.ids.data(), ws.pos.data(), tokens);
  // One region for the whole pass: the backend keeps its threads in it from one loop to the next.
  backend_.RunRegion([&] {
    AnnounceProduct(0, 0);
    // Embedding (SPEC §5.2): h = renorm(e8[id] * m[id]) at scale 2^-k[id].
    backend_.ParallelFor(tokens, [&](int64_t begin, int64_t end, int) {
      for (int64_t t = begin; t < end; ++t) {
        const auto id = Sz(ws.ids[Sz(t)]);
        ws.k_res[Sz(t)] =
            ResidualFromDelta(w_.embed_e8 + static_cast<int64_t>(id) * c.hidden, c.hidden,
                              w_.embed_m[id], w_.embed_k[id], ws.h.data() + t * c.hidden);
      }
    });
    tr.Record("", "embed.h", {tokens, c.hidden}, ws.h.data());
    tr.Record("", "embed.k_res", {tokens}, ws.k_res.data());
    tr.Flush();

    // The decoder layers (SPEC §5.3-§5.5): attention, then the MLP, each added to the residual.
    for (int64_t layer = 0; layer < c.n_layers; ++layer) {
      AttentionBlock(layer, tr);
      tr.Flush();
      MlpBlock(layer, tr);
      tr.Flush();
    }
    ThrowOnDivisionByZero();
    for (ForwardRow& r : rows) r.cache->Advance(r.n_tokens);

    // Final norm (no smoothing) and the LM head (SPEC §5.6), for the tokens whose logits are
    // wanted.
    NormQuant(nullptr, 0, ws.x8.data(), ws.xm.data(), ws.xk.data(), tr.on() ? "final." : "", tr);
    LmHead(rows);
    if (rows[0].all_logits) tr.Record("", "final.logits", {tokens, c.vocab}, rows[0].all_logits);
    tr.Flush();
  });
  if (profile_ != nullptr) {
    ++profile_->calls;
    profile_->total_ns += NanosecondsSince(started);
  }
  for (ThreadScratch& s : ws.scratch) {
    wraps_.q_quant += s.wraps_q.events;
    wraps_.down_input += s.wraps_down.events;
    wraps_.other += s.wraps_other.events;
    s.wraps_q = s.wraps_down = s.wraps_other = {};
  }
}

// Rows that want every token's logits get their own GEMM; the last tokens of the others are
// gathered into one, so a decode batch streams the LM head once, not once per row.
void IntQwen3::LmHead(std::span<ForwardRow> rows) {
  const ModelConfig& c = w_.config;
  Workspace& ws = *ws_;
  int64_t t0 = 0, gathered = 0;
  for (ForwardRow& r : rows) {
    const int8_t* x8 = ws.x8.data() + t0 * c.hidden;
    if (r.all_scale_m) std::copy_n(ws.xm.data() + t0, r.n_tokens, r.all_scale_m);
    if (r.all_scale_k) std::copy_n(ws.xk.data() + t0, r.n_tokens, r.all_scale_k);
    if (r.all_logits) {
      Multiply(x8, r.n_tokens, *head_, r.all_logits, true);
      if (r.last_logits) {
        std::copy_n(r.all_logits + (r.n_tokens - 1) * c.vocab, c.vocab, r.last_logits);
      }
    } else if (r.last_logits) {
      std::copy_n(x8 + (r.n_tokens - 1) * c.hidden, c.hidden,
                  ws.head_x8.data() + gathered * c.hidden);
      ws.head_out[Sz(gathered++)] = r.last_logits;
    }
    t0 += r.n_tokens;
  }
  if (gathered == 0) return;
  // Buffers that lie back to back, a vocabulary apart and in the rows' order (GenerateGreedy's
  // and the bench's: one block for the batch), are the GEMM's own [gathered, vocab] output, so
  // the product goes straight into them; a batch of 8 would otherwise copy 4.9 MB of logits
  // after it, about 4% of its step on one thread (docs/RESULTS.md, "The batch's LM head
  // straight into the rows' buffers").
  const auto first = reinterpret_cast<uintptr_t>(ws.head_out[0]);
  const auto row_bytes = static_cast<uintptr_t>(c.vocab) * sizeof(int32_t);
  bool back_to_back = true;
  for (int64_t i = 1; i < gathered && back_to_back; ++i) {
    back_to_back = reinterpret_cast<uintptr_t>(ws.head_out[Sz(i)]) ==
                   first + static_cast<uintptr_t>(i) * row_bytes;
  }
  if (back_to_back) {
    Multiply(ws.head_x8.data(), gathered, *head_, ws.head_out[0], true);
    return;
  }
  Multiply(ws.head_x8.data(), gathered, *head_, ws.head_logits.data(), true);
  // Each row's logits to its own buffer, a row per work item.
  backend_.ParallelFor(gathered, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) {
      std::copy_n(ws.head_logits.data() + i * c.vocab, c.vocab, ws.head_out[Sz(i)]);
    }
  });
}

// torch raises on an integer division by zero, so DetLLM has no result for such a call; neither
// has detverify (docs/SPEC.md §2.3). Only wrapped scales or out-of-range constants reach one.
void IntQwen3::ThrowOnDivisionByZero() {
  int64_t v = 0, k = 0, e = 0;
  for (ThreadScratch& s : ws_->scratch) {
    v += s.zero_v_denominators;
    k += s.zero_k_denominators;
    e += s.zero_exp_divisors;
    s.zero_v_denominators = s.zero_k_denominators = s.zero_exp_divisors = 0;
  }
  ThrowIfDividedByZero(k, v, e);
}

void ThrowIfDividedByZero(int64_t k, int64_t v, int64_t e) {
  if (k > 0) {
    throw ArithmeticError(
        "division by zero: a K-cache denominator kq_m << (row k - kq_k) wrapped to 0 (the "
        "no-QK-Norm variant); no logits for this call (docs/SPEC.md §9)");
  }
  if (v > 0) {
    throw ArithmeticError(
        "division by zero: a V-cache denominator vq_m << (xk + v.k - vq_k) wrapped to 0, where "
        "DetLLM raises; no logits for this call (docs/SPEC.md §2.3)");
  }
  if (e > 0) {
    throw ArithmeticError(
        "division by zero: a wrapped attention scale gave DI-Exp the divisor 0, where DetLLM "
        "raises; no logits for this call (docs/SPEC.md §2.3)");
  }
}

// Attention (SPEC §5.3-§5.4): normed and smoothed input, fused q/k/v GEMM, the per-head
// pipeline into the K/V cache, attention over the row's slots, the o-projection, the residual.
void IntQwen3::AttentionBlock(int64_t layer, TraceRecorder& tr) {
  const ModelConfig& c = w_.config;
  const LayerWeights& L = w_.layers[Sz(layer)];
  const PackedLayer& P = packed_[Sz(layer)];
  Workspace& ws = *ws_;
  const int64_t M = ws.tokens, qd = c.n_q_heads * c.head_dim;
  const std::string pre = tr.Prefix(layer, ".attn.");

  NormQuant(&L.as_m, L.as_k, ws.x8.data(), ws.xm.data(), ws.xk.data(), pre, tr);
  const PackedWeight* const qkv[] = {P.q.get(), P.k.get(), P.v.get()};
  int32_t* const qkv_out[] = {ws.pq.data(), ws.pk.data(), ws.pv.data()};
  Multiply(ws.x8.data(), M, qkv, qkv_out);
  AnnounceProduct(layer, 1);
  QkvHeads(layer, pre, tr);
  Attention(layer, pre, tr);

  // o-proj input: ctx * os_m requantized to per-token int8 against the per-head V scales.
  int8_t* a8 = ws.x8.data();
  const TraceTensor tr_oin = tr.Open(pre, "o_in", {M, qd});
  backend_.ParallelFor(M, [&](int64_t begin, int64_t end, int thread) {
    ThreadScratch& s = ws.scratch[Sz(thread)];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t* ctx = ws.ctx.data() + t * qd;
      ops_.MulColumns(ctx, L.os_m.data(), qd, s.y64.data());
      tr_oin.Put(t * qd, s.y64.data(), qd);
      const Dyadic a =
          ops_.RequantI8RowColumn(s.y64.data(), L.attn_out_col_m.data(), qd, 1, L.os_k,
                                  L.attn_out_col_k, s.s64.data(), a8 + t * qd, &s.wraps_other);
      ws.xm[Sz(t)] = a.m;
      ws.xk[Sz(t)] = a.k;
    }
  });
  tr.Record(pre, "a8", {M, qd}, a8);
  tr.Record(pre, "am", {M}, ws.xm.data());
  tr.Record(pre, "ak", {M}, ws.xk.data());
  Multiply(a8, M, *P.o, ws.po.data());
  AnnounceProduct(layer, 2);

  AddToResidual(L.o, pre, "Po", "o", tr);
}

// Q/K head pipeline, one (token, head) per work item so that a single decoded token still
// spreads over the threads: per head requant to 16 bits -> QK-Norm(gamma) -> RoPE at the
// token's position. Q is then smoothed and quantized per (token, head); K and V are quantized
// at their static scales straight into the row's cache slot. Without QK-Norm (the Llama
// variant, SPEC §9) the requant's row scale (xm, xk + w.k - sh) is kept instead of the norm's
// fixed one and carried into Q's quantization and K's static requant, as V's is.
void IntQwen3::QkvHeads(int64_t layer, const std::string& pre, TraceRecorder& tr) {
  const ModelConfig& c = w_.config;
  const LayerWeights& L = w_.layers[Sz(layer)];
  Workspace& ws = *ws_;
  const int64_t M = ws.tokens, d = c.head_dim, nq = c.n_q_heads, nkv = c.n_kv_heads;
  const int64_t qd = nq * d, kvd = nkv * d;
  const int64_t q_quant_k = WrapAdd(WrapAdd(kNormOutFracBits, L.q_norm_k), L.qs_k);

  tr.Record(pre, "Pq", {M, qd}, ws.pq.data());
  tr.Record(pre, "Pk", {M, kvd}, ws.pk.data());
  tr.Record(pre, "Pv", {M, kvd}, ws.pv.data());
  // Per head [M, heads, d]; the requant shifts xk + w.k - sh per [M, heads].
  const TraceTensor tr_qrq = tr.Open(pre, "q_requant", {M, nq, d});
  const TraceTensor tr_qrk = tr.Open(pre, "q_requant_k", {M, nq});
  const bool norm = c.qk_norm;
  const TraceTensor tr_qn = norm ? tr.Open(pre, "q_norm", {M, nq, d}) : TraceTensor();
  const TraceTensor tr_qr = tr.Open(pre, "q_rope", {M, nq, d});
  const TraceTensor tr_qs = tr.Open(pre, "q_smooth", {M, nq, d});
  const TraceTensor tr_krq = tr.Open(pre, "k_requant", {M, nkv, d});
  const TraceTensor tr_krk = tr.Open(pre, "k_requant_k", {M, nkv});
  const TraceTensor tr_kn = norm ? tr.Open(pre, "k_norm", {M, nkv, d}) : TraceTensor();
  const TraceTensor tr_kr = tr.Open(pre, "k_rope", {M, nkv, d});
  const TraceTensor tr_k8 = tr.Open(pre, "k8", {M, nkv, d});
  const TraceTensor tr_v8 = tr.Open(pre, "v8", {M, nkv, d});
  const int64_t heads = nq + nkv;
  backend_.ParallelFor(M * heads, [&](int64_t begin, int64_t end, int thread) {
    ThreadScratch& s = ws.scratch[Sz(thread)];
    int32_t* y32 = s.y32.data();
    int64_t* y64 = s.y64.data();
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / heads, head = item % heads;
      const int64_t pos = ws.pos[Sz(t)];
      const int16_t* cos_row = w_.rope_cos.data() + pos * d;
      const int16_t* sin_row = w_.rope_sin.data() + pos * d;
      if (head < nq) {
        const int64_t h = head, kvh = h / c.group(), at = t * qd + h * d;
        const int64_t sh = ops_.RequantI32(ws.pq.data() + at, L.q.m.data() + h * d, d, 16, y32);
        tr_qrq.Put(at, y32, d);
        const int64_t row_k = WrapSub(WrapAdd(ws.xk[Sz(t)], L.q.k), sh);
        tr_qrk.Set(t * nq + h, row_k);
        if (norm) {
          ops_.RmsNormGamma(y32, d, L.q_norm_m.data(), y64);
          tr_qn.Put(at, y64, d);
        } else {
          std::copy_n(y32, d, y64);
        }
        ops_.Rope(y64, d, cos_row, sin_row);
        tr_qr.Put(at, y64, d);
        ops_.MulColumns(y64, L.qs_m.data() + kvh * d, d, y64);
        tr_qs.Put(at, y64, d);
        const Dyadic q = norm ? ops_.QuantI8(y64, d, 1, q_quant_k, ws.q8.data() + at, &s.wraps_q)
                              : ops_.QuantI8(y64, d, ws.xm[Sz(t)], WrapAdd(row_k, L.qs_k),
                                             ws.q8.data() + at, &s.wraps_q);
        ws.qm[Sz(t * nq + h)] = q.m;
        ws.qk[Sz(t * nq + h)] = q.k;
      } else {
        const int64_t h = head - nq, at = t * kvd + h * d;
        const int64_t sh = ops_.RequantI32(ws.pk.data() + at, L.k.m.data() + h * d, d, 16, y32);
        tr_krq.Put(at, y32, d);
        const int64_t row_k = WrapSub(WrapAdd(ws.xk[Sz(t)], L.k.k), sh);
        tr_krk.Set(t * nkv + h, row_k);
        if (norm) {
          ops_.RmsNormGamma(y32, d, L.k_norm_m.data(), y64);
          tr_kn.Put(at, y64, d);
        } else {
          std::copy_n(y32, d, y64);
        }
        ops_.Rope(y64, d, cos_row, sin_row);
        tr_kr.Put(at, y64, d);
        int8_t* k8 = s.k8.data();
        int8_t* v8 = s.v8.data();
        const int64_t k_row_m = norm ? 1 : ws.xm[Sz(t)], k_row_k = norm ? L.k_rowk : row_k;
        // The token's own K-cache denominators (SPEC §9), counted like V's when one wraps to 0.
        if (!norm &&
            AnyStaticDenominatorZero(k_row_k, L.kq_m.data() + h * d, L.kq_k.data() + h * d, d)) {
          ++s.zero_k_denominators;
        }
        ops_.RequantI8StaticColumns(y64, d, k_row_m, k_row_k, L.kq_m.data() + h * d,
                                    L.kq_k.data() + h * d, k8);
        const int64_t v_shift = WrapSub(WrapAdd(ws.xk[Sz(t)], L.v.k), L.vq_k[Sz(h)]);
        if (StaticDenominator(L.vq_m[Sz(h)], v_shift) == 0) ++s.zero_v_denominators;
        ops_.RequantI8StaticRow(ws.pv.data() + at, d, ws.xm[Sz(t)], ws.xk[Sz(t)],
                                L.v.m.data() + h * d, L.v.k, L.vq_m[Sz(h)], L.vq_k[Sz(h)], v8);
        ws.cache[Sz(t)]->Write(layer, h, pos, k8, v8);
        tr_k8.Put(at, k8, d);
        tr_v8.Put(at, v8, d);
      }
    }
  });
  // The requants' returned mantissa is the row's xm (discarded: the norm cancels the scale).
  tr.Record(pre, "q_requant_m", {M}, ws.xm.data());
  if (norm) {
    tr.RecordFill(pre, "q_norm_k", {}, WrapAdd(kNormOutFracBits, L.q_norm_k));
    tr.RecordFill(pre, "q_smooth_k", {}, q_quant_k);
  }
  tr.Record(pre, "q8", {M, nq, d}, ws.q8.data());
  tr.Record(pre, "qm", {M, nq}, ws.qm.data());
  tr.Record(pre, "qk", {M, nq}, ws.qk.data());
  tr.Record(pre, "k_requant_m", {M}, ws.xm.data());
  if (norm) tr.RecordFill(pre, "k_norm_k", {}, WrapAdd(kNormOutFracBits, L.k_norm_k));
}

// Attention of each (token, q head) over its row's slots 0..pos (causal; every slot of the
// row's own cache is valid). One work item is a token's KV head with the group of q heads that
// share it, so a backend can read that head's K and V once. Every cache write of this call
// happened in QkvHeads.
void IntQwen3::Attention(int64_t layer, const std::string& pre, TraceRecorder& tr) {
  const ModelConfig& c = w_.config;
  const LayerWeights& L = w_.layers[Sz(layer)];
  Workspace& ws = *ws_;
  const int64_t M = ws.tokens, d = c.head_dim, nq = c.n_q_heads, qd = nq * d;
  const int64_t nkv = c.n_kv_heads, group = c.group();

  // A trace shows every query row over all of the call's slots.
  const int64_t tr_slots = tr.on() ? ws.pos[Sz(M - 1)] + 1 : 0;
  const TraceTensor tr_scores = tr.Open(pre, "scores", {M, nq, tr_slots});
  const TraceTensor tr_smraw = tr.Open(pre, "sm_raw", {M, nq});
  const TraceTensor tr_skraw = tr.Open(pre, "sk_raw", {M, nq});
  const TraceTensor tr_sm = tr.Open(pre, "sm", {M, nq});
  const TraceTensor tr_sk = tr.Open(pre, "sk", {M, nq});
  const TraceTensor tr_exp = tr.Open(pre, "exp", {M, nq, tr_slots});
  const TraceTensor tr_tpos = tr.Open(pre, "exp_tpos", {M, nq});
  const TraceTensor tr_probs = tr.Open(pre, "probs", {M, nq, tr_slots});
  backend_.ParallelFor(M * nkv, [&](int64_t begin, int64_t end, int thread) {
    ThreadScratch& s = ws.scratch[Sz(thread)];
    // One scratch row per query of the group; rows hold at least the cache capacity (>= n_slots).
    const auto stride = static_cast<int64_t>(s.scores.size()) / group;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / nkv, kvh = item % nkv, h0 = kvh * group, th0 = t * nq + h0;
      const int64_t n_slots = ws.pos[Sz(t)] + 1;
      const KvHeadView kv = ws.cache[Sz(t)]->view(layer, kvh);
      for (int64_t i = 0; i < group; ++i) {
        const int64_t sm_raw = WrapMul(ws.qm[Sz(th0 + i)], L.ks_m[Sz(kvh)]);
        const int64_t sk_raw = WrapAdd(ws.qk[Sz(th0 + i)], L.ks_k[Sz(kvh)]);
        s.scales[Sz(i)] = NormScale(sm_raw, sk_raw);
        if (DiExpDivisor(s.scales[Sz(i)].m) == 0) ++s.zero_exp_divisors;
        tr_smraw.Set(th0 + i, sm_raw);
        tr_skraw.Set(th0 + i, sk_raw);
      }
      ops_.AttendGroup(group, ws.q8.data() + t * qd + h0 * d, kv, n_slots, s.scales.data(), stride,
                       s.scores.data(), s.exps.data(), s.probs.data(),
                       ws.ctx.data() + t * qd + h0 * d, s.tpos.data());
      if (!tr.on()) continue;
      for (int64_t i = 0; i < group; ++i) {
        const int64_t th = th0 + i;
        tr_sm.Set(th, s.scales[Sz(i)].m);
        tr_sk.Set(th, s.scales[Sz(i)].k);
        tr_tpos.Set(th, s.tpos[Sz(i)]);
        tr_probs.Put(th * tr_slots, s.probs.data() + i * stride, n_slots);
        TraceRecorder::ScoresAndExps(ws.q8.data() + t * qd + (h0 + i) * d, kv, n_slots, tr_slots,
                                     s.tpos[Sz(i)], tr_scores.data() + th * tr_slots,
                                     tr_exp.data() + th * tr_slots);
      }
    }
  });
  tr.Record(pre, "ctx", {M, qd}, ws.ctx.data());
}

// The MLP (SPEC §5.5): normed and smoothed input, fused gate/up GEMM, both requantized to 14
// bits, SwiGLU, down-input smoothing and per-token int8 (W2), the down-projection, the residual.
void IntQwen3::MlpBlock(int64_t layer, TraceRecorder& tr) {
  const ModelConfig& c = w_.config;
  const LayerWeights& L = w_.layers[Sz(layer)];
  const PackedLayer& P = packed_[Sz(layer)];
  Workspace& ws = *ws_;
  const int64_t M = ws.tokens, inter = c.intermediate;
  const std::string pre = tr.Prefix(layer, ".mlp.");

  NormQuant(&L.ms_m, L.ms_k, ws.x8.data(), ws.xm.data(), ws.xk.data(), pre, tr);
  const PackedWeight* const gate_up[] = {P.gate.get(), P.up.get()};
  int32_t* const gate_up_out[] = {ws.pg.data(), ws.pu.data()};
  Multiply(ws.x8.data(), M, gate_up, gate_up_out);
  AnnounceProduct(layer, 3);
  tr.Record(pre, "Pg", {M, inter}, ws.pg.data());
  tr.Record(pre, "Pu", {M, inter}, ws.pu.data());

  int8_t* dx8 = ws.x8.data();
  // gate and up keep the row mantissa xm (RequantI32Common only shifts): gate_m and up_m are it.
  const TraceTensor tr_gm = tr.Open(pre, "gate_m", {M});
  const TraceTensor tr_gk = tr.Open(pre, "gate_k", {M});
  const TraceTensor tr_um = tr.Open(pre, "up_m", {M});
  const TraceTensor tr_uk = tr.Open(pre, "up_k", {M});
  const TraceTensor tr_sig = tr.Open(pre, "sig_exp", {M, inter});
  const TraceTensor tr_tpos = tr.Open(pre, "sig_tpos", {M});
  const TraceTensor tr_sw = tr.Open(pre, "swiglu", {M, inter});
  const TraceTensor tr_swm = tr.Open(pre, "swiglu_m", {M});
  const TraceTensor tr_swk = tr.Open(pre, "swiglu_k", {M});
  const TraceTensor tr_din = tr.Open(pre, "down_in", {M, inter});
  const TraceTensor tr_dink = tr.Open(pre, "down_in_k", {M});
  // The inside of the down-input quantization (W2, SPEC §8): a, NormScale's (m, k) of the row
  // mantissa, a*m as int64, and whether that product wrapped.
  const TraceTensor tr_da = tr.Open(pre, "down_a", {M});
  const TraceTensor tr_dmn = tr.Open(pre, "down_mn", {M});
  const TraceTensor tr_dkn = tr.Open(pre, "down_kn", {M});
  const TraceTensor tr_dam = tr.Open(pre, "down_am", {M});
  const TraceTensor tr_dwrap = tr.Open(pre, "down_wrap", {M});
  backend_.ParallelFor(M, [&](int64_t begin, int64_t end, int thread) {
    ThreadScratch& s = ws.scratch[Sz(thread)];
    for (int64_t t = begin; t < end; ++t) {
      int32_t* g = ws.pg.data() + t * inter;
      int32_t* u = ws.pu.data() + t * inter;
      const int64_t xm = ws.xm[Sz(t)], xk = ws.xk[Sz(t)];
      // gate/up to 14 bits (in place), SwiGLU in int64.
      const int64_t gk =
          WrapSub(WrapAdd(xk, L.gate.k), ops_.RequantI32(g, L.gate.m.data(), inter, 14, g));
      const int64_t uk =
          WrapSub(WrapAdd(xk, L.up.k), ops_.RequantI32(u, L.up.m.data(), inter, 14, u));
      const int64_t tpos = DiExpTpos(xm, gk);
      ops_.Swiglu(g, u, inter, tpos, s.y64.data());
      const int64_t sw_m = WrapMul(xm, xm);
      const int64_t sw_k = WrapAdd(WrapAdd(gk, uk), kSigmoidFracBits);
      const int64_t din_k = WrapAdd(sw_k, L.ds_k);
      tr_gm.Set(t, xm);
      tr_gk.Set(t, gk);
      tr_um.Set(t, xm);
      tr_uk.Set(t, uk);
      tr_tpos.Set(t, tpos);
      tr_sw.Put(t * inter, s.y64.data(), inter);
      tr_swm.Set(t, sw_m);
      tr_swk.Set(t, sw_k);
      tr_dink.Set(t, din_k);
      if (tr.on()) TraceRecorder::SigmoidExps(g, inter, tpos, tr_sig.data() + t * inter);
      // Down-input smoothing, per-token int8.
      ops_.MulColumns(s.y64.data(), L.ds_m.data(), inter, s.y64.data());
      tr_din.Put(t * inter, s.y64.data(), inter);
      if (tr.on()) {
        const Dyadic mn = NormScale(sw_m, din_k);
        const int64_t a = MaxAbsClamped(s.y64.data(), inter);
        tr_da.Set(t, a);
        tr_dmn.Set(t, mn.m);
        tr_dkn.Set(t, mn.k);
        tr_dam.Set(t, WrapMul(a, mn.m));
        tr_dwrap.Set(t, MulOverflows(a, mn.m) ? 1 : 0);
      }
      const Dyadic q =
          ops_.QuantI8(s.y64.data(), inter, sw_m, din_k, dx8 + t * inter, &s.wraps_down);
      ws.xm[Sz(t)] = q.m;
      ws.xk[Sz(t)] = q.k;
    }
  });
  tr.Record(pre, "gate", {M, inter}, ws.pg.data());
  tr.Record(pre, "up", {M, inter}, ws.pu.data());
  tr.Record(pre, "down_x8", {M, inter}, dx8);
  tr.Record(pre, "down_xm", {M}, ws.xm.data());
  tr.Record(pre, "down_xk", {M}, ws.xk.data());
  Multiply(dx8, M, *P.down, ws.po.data());
  AnnounceProduct(layer + 1, 0);

  AddToResidual(L.down, pre, "Pdown", "down", tr);
}

// A projection's int32 output (ws.po, at the token scales ws.xm, ws.xk times the weight's
// column scales) requantized to 20 bits and added into the residual. Trace names: <product>,
// <delta>_delta(_m, _k), h_out, k_res_out (after `pre`).
void IntQwen3::AddToResidual(const LinearWeights& proj, const std::string& pre, const char* product,
                             const char* delta, TraceRecorder& tr) {
  Workspace& ws = *ws_;
  const int64_t M = ws.tokens, hid = w_.config.hidden;
  const std::string delta_name = tr.on() ? std::string(delta) + "_delta" : std::string();
  tr.Record(pre, product, {M, hid}, ws.po.data());
  // The delta keeps the row mantissa of the projection's input (RequantI32Common only shifts).
  tr.Record(pre, (delta_name + "_m").c_str(), {M}, ws.xm.data());
  const TraceTensor tr_delta = tr.Open(pre, delta_name.c_str(), {M, hid});
  const TraceTensor tr_dk = tr.Open(pre, (delta_name + "_k").c_str(), {M});
  backend_.ParallelFor(M, [&](int64_t begin, int64_t end, int thread) {
    ThreadScratch& s = ws.scratch[Sz(thread)];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t sh =
          ops_.RequantI32(ws.po.data() + t * hid, proj.m.data(), hid, 20, s.y32.data());
      const int64_t dk = WrapSub(WrapAdd(ws.xk[Sz(t)], proj.k), sh);
      tr_delta.Put(t * hid, s.y32.data(), hid);
      tr_dk.Set(t, dk);
      ws.k_res[Sz(t)] = ops_.AddResidual(ws.h.data() + t * hid, hid, ws.k_res[Sz(t)], s.y32.data(),
                                         ws.xm[Sz(t)], dk);
    }
  });
  tr.Record(pre, "h_out", {M, hid}, ws.h.data());
  tr.Record(pre, "k_res_out", {M}, ws.k_res.data());
}

}  // namespace dv
