// The per-row operations (engine/backends/row_ops.h) as programs of one block of threads: how
// the cuda backend's kernels run a row on the device, one block per row. The host runs the same
// code with the block's threads emulated one after another (HostBlock), so the device's indexing
// and reductions are tested on any machine, bit for bit, against the plain definitions
// (tests/engine/block_row_ops_test.cc).
//
// A block program is a sequence of phases. b.Each(f) runs f(tid) for every thread tid of the
// block (on the device: the calling thread's own), b.Sync() ends a phase (on the device
// __syncthreads(); on the host nothing, since Each has run every thread to the end). A value one
// thread computes reaches another only through the block's shared slots across a Sync; values
// every thread computes alike from such results (a row's shift, its scale) are ordinary locals.
// Thread tid takes elements tid, tid + size, ... of a row, and the row's reductions combine the
// threads' partials in a tree: max and the wrap-around int64 sum are associative and commutative
// (the sum modulo 2^64), so every tree gives the bits of the plain left-to-right loop.
//
// The element arithmetic is the operators' own (NormElement, QuantElement, RenormElement, DiExp,
// DiSigmoid, RequantI8Static...), so there is one definition of each rounding and wrap edge.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "engine/backends/row_ops.h"
#include "engine/dyadic.h"
#include "engine/intmath.h"
#include "engine/ops/di_exp.h"
#include "engine/ops/di_rmsnorm.h"
#include "engine/ops/di_softmax.h"
#include "engine/ops/di_swiglu.h"
#include "engine/ops/rope.h"

namespace dv::block {

// A block of `threads` threads emulated on the host: Each runs them in turn. (Its methods are
// host-device only so that nvcc, which compiles every block program for both sides, accepts the
// programs' device-side instances for this block too; they run on the host only.) Its shared
// slots live in the object up to kInlineThreads threads, so that a row operation of BlockRowOps
// allocates nothing; wider blocks (the tests' 1,024) take them from the heap.
class HostBlock {
 public:
  static constexpr int kInlineThreads = 64;
  explicit HostBlock(int threads) : threads_(threads < 1 ? 1 : threads) {
    if (threads_ > kInlineThreads) heap_.resize(2 * static_cast<size_t>(threads_));
    shared_ = threads_ > kInlineThreads ? heap_.data() : inline_.data();
  }
  // shared_ points into the object itself.
  HostBlock(const HostBlock&) = delete;
  HostBlock& operator=(const HostBlock&) = delete;
  DV_INLINE int size() const { return threads_; }
  template <typename F>
  DV_INLINE void Each(F&& f) {
    for (int t = 0; t < threads_; ++t) f(t);
  }
  DV_INLINE void Sync() {}
  // 2 * size() int64 slots the block's threads share (zero at first).
  DV_INLINE int64_t* shared() { return shared_; }

 private:
  int threads_;
  std::array<int64_t, 2 * kInlineThreads> inline_{};
  std::vector<int64_t> heap_;
  int64_t* shared_ = nullptr;
};

struct MaxOp {
  DV_INLINE int64_t operator()(int64_t a, int64_t b) const { return Max(a, b); }
};
struct SumOp {
  DV_INLINE int64_t operator()(int64_t a, int64_t b) const { return WrapAdd(a, b); }
};

// The reduction tree over the threads' partials: merge(t, u) folds thread u's partial into
// thread t's, halving the live partials each round until thread 0's holds all of them.
template <typename Block, typename Merge>
DV_INLINE void Tree(Block& b, Merge merge) {
  b.Sync();
  for (int width = b.size(); width > 1;) {
    const int half = (width + 1) / 2;
    b.Each([&](int t) {
      if (t < width - half) merge(t, t + half);
    });
    b.Sync();
    width = half;
  }
}

// Combines the partials in shared()[0, size) with op; every thread gets the result, and the
// slots are free again when it returns.
template <typename Block, typename Op>
DV_INLINE int64_t Combine(Block& b, Op op) {
  int64_t* s = b.shared();
  Tree(b, [&](int t, int u) { s[t] = op(s[t], s[u]); });
  const int64_t r = s[0];
  b.Sync();  // every thread has read s[0] before the next phase writes the slots
  return r;
}

// op over value(i), i in [0, n), starting from init (op's identity for the row's purpose).
template <typename Block, typename Op, typename F>
DV_INLINE int64_t Reduce(Block& b, int64_t n, int64_t init, Op op, F value) {
  int64_t* s = b.shared();
  const int64_t stride = b.size();
  b.Each([&](int t) {
    int64_t a = init;
    for (int64_t i = t; i < n; i += stride) a = op(a, value(i));
    s[t] = a;
  });
  return Combine(b, op);
}

// f(i) for every i in [0, n), thread t taking t, t + size, ...
template <typename Block, typename F>
DV_INLINE void ForEach(Block& b, int64_t n, F f) {
  const int64_t stride = b.size();
  b.Each([&](int t) {
    for (int64_t i = t; i < n; i += stride) f(i);
  });
}

// f() on thread 0 only (a counter, a row's scalar result).
template <typename Block, typename F>
DV_INLINE void One(Block& b, F f) {
  b.Each([&](int t) {
    if (t == 0) f();
  });
}

// ---- The operations, as RowOps declares them, each ending with a Sync (its outputs are then
// visible to every thread of the block).

// DiRmsNormT: y = norm(x), times gamma_m when given.
template <typename Block, typename T, typename Out>
DV_INLINE void RmsNorm(Block& b, const T* x, int64_t n, const int64_t* gamma_m, Out* y) {
  const int64_t g =
      Reduce(b, n, 0, MaxOp{}, [&](int64_t i) { return WrapAbs(static_cast<int64_t>(x[i])); });
  const int64_t sh = NormShift(g);
  const int64_t ssum = Reduce(
      b, n, 0, SumOp{}, [&](int64_t i) { return NormSquare(static_cast<int64_t>(x[i]), sh); });
  const int64_t rms = NormRms(ssum, n);
  ForEach(b, n, [&](int64_t i) {
    const int32_t v = NormElement(static_cast<int64_t>(x[i]), sh, rms);
    y[i] = gamma_m == nullptr ? static_cast<Out>(v) : static_cast<Out>(WrapMul(v, gamma_m[i]));
  });
  b.Sync();
}

// QuantI8PerToken; *wrapped says whether a*m left int64 (the caller counts it once).
template <typename Block, typename T>
DV_INLINE Dyadic QuantI8(Block& b, const T* x, int64_t n, int64_t m, int64_t k, int8_t* x8,
                         bool* wrapped) {
  const Dyadic s = NormScale(m, k);
  const int64_t a =
      Reduce(b, n, 1, MaxOp{}, [&](int64_t i) { return WrapAbs(static_cast<int64_t>(x[i])); });
  ForEach(b, n, [&](int64_t i) { x8[i] = QuantElement(static_cast<int64_t>(x[i]), a); });
  b.Sync();
  *wrapped = MulOverflows(a, s.m);
  return QuantScale(a, s);
}

// RequantI32Common (y == p allowed). Returns the shift.
template <typename Block>
DV_INLINE int64_t RequantI32(Block& b, const int32_t* p, const int64_t* col_m, int64_t n,
                             int64_t target_bits, int32_t* y) {
  const int64_t a =
      Reduce(b, n, 1, MaxOp{}, [&](int64_t i) { return WrapAbs(WrapMul(p[i], col_m[i])); });
  const int64_t sh = RequantShift(a, target_bits);
  ForEach(b, n, [&](int64_t i) {
    y[i] = static_cast<int32_t>(RoundingShiftRight(WrapMul(p[i], col_m[i]), sh));
  });
  b.Sync();
  return sh;
}

// RequantI8RowCol; s is scratch of n int64; *wrapped as in QuantI8.
template <typename Block>
DV_INLINE Dyadic RequantI8RowColumn(Block& b, const int64_t* p, const int64_t* col_m, int64_t n,
                                    int64_t row_m, int64_t row_k, int64_t col_k, int64_t* s,
                                    int8_t* y8, bool* wrapped) {
  int64_t a = Reduce(b, n, 1, MaxOp{}, [&](int64_t i) {
    s[i] = WrapMul(p[i], col_m[i]);
    return WrapAbs(s[i]);
  });
  const int64_t sh = RowColPreShift(a);
  if (sh > 0) {
    a = Reduce(b, n, 1, MaxOp{}, [&](int64_t i) {
      s[i] = RoundingShiftRight(s[i], sh);
      return WrapAbs(s[i]);
    });
  }
  ForEach(b, n, [&](int64_t i) { y8[i] = QuantElement(s[i], a); });
  b.Sync();
  *wrapped = MulOverflows(a, row_m);
  return RowColScale(a, row_m, row_k, col_k, sh);
}

// Where a static requant's element i goes: y8[i], or (the device program's K/V cache writes)
// store(i, value) for a callable.
template <typename Out>
DV_INLINE void StoreI8(Out& out, int64_t i, int8_t value) {
  if constexpr (std::is_pointer_v<Out>) {
    out[i] = value;
  } else {
    out(i, value);
  }
}

// RequantI8Static at one static target scale for the whole row (the V cache entry).
template <typename Block, typename Out>
DV_INLINE void RequantI8StaticRow(Block& b, const int32_t* p, int64_t n, int64_t row_m,
                                  int64_t row_k, const int64_t* col_m, int64_t col_k, int64_t s_m,
                                  int64_t s_k, Out y8) {
  ForEach(b, n, [&](int64_t i) {
    StoreI8(y8, i, RequantI8Static(p[i], row_m, row_k, col_m[i], col_k, s_m, s_k));
  });
  b.Sync();
}

// RequantI8Static at per-channel static target scales (the K cache entry).
template <typename Block, typename Out>
DV_INLINE void RequantI8StaticColumns(Block& b, const int64_t* p, int64_t n, int64_t row_m,
                                      int64_t row_k, const int64_t* s_m, const int64_t* s_k,
                                      Out y8) {
  ForEach(b, n, [&](int64_t i) {
    StoreI8(y8, i, RequantI8Static(p[i], row_m, row_k, 1, 0, s_m[i], s_k[i]));
  });
  b.Sync();
}

// ResidualAdd in place; returns the new k_res.
template <typename Block>
DV_INLINE int64_t AddResidual(Block& b, int32_t* h, int64_t n, int64_t k_res, const int32_t* d,
                              int64_t dm, int64_t dk) {
  const int64_t rel = WrapSub(dk, k_res);
  // Thread t reads h[i] in the max and writes it below for the same i: no other thread's h.
  const int64_t g = Reduce(b, n, 0, MaxOp{},
                           [&](int64_t i) { return WrapAbs(ResidualSum(h[i], d[i], dm, rel)); });
  const RenormShifts s = ResidualRenormShifts(g);
  ForEach(b, n, [&](int64_t i) { h[i] = RenormElement(ResidualSum(h[i], d[i], dm, rel), s); });
  b.Sync();
  return RenormK(k_res, s);
}

// ResidualFromDelta (the embedding row): h = renorm(d * dm) at 2^-dk; returns k_res.
template <typename Block, typename T>
DV_INLINE int64_t FromDelta(Block& b, const T* d, int64_t n, int64_t dm, int64_t dk, int32_t* h) {
  const int64_t g = Reduce(b, n, 0, MaxOp{}, [&](int64_t i) {
    return WrapAbs(WrapMul(static_cast<int64_t>(d[i]), dm));
  });
  const RenormShifts s = ResidualRenormShifts(g);
  ForEach(b, n,
          [&](int64_t i) { h[i] = RenormElement(WrapMul(static_cast<int64_t>(d[i]), dm), s); });
  b.Sync();
  return RenormK(dk, s);
}

// y[i] = x[i], widened.
template <typename Block, typename T, typename U>
DV_INLINE void Copy(Block& b, const T* x, int64_t n, U* y) {
  ForEach(b, n, [&](int64_t i) { y[i] = static_cast<U>(x[i]); });
  b.Sync();
}

// y[i] = x[i] * m[i] (y == x allowed).
template <typename Block, typename T>
DV_INLINE void MulColumns(Block& b, const T* x, const int64_t* m, int64_t n, int64_t* y) {
  ForEach(b, n, [&](int64_t i) { y[i] = WrapMul(static_cast<int64_t>(x[i]), m[i]); });
  b.Sync();
}

// ApplyIntRope in place: thread t rotates the pairs (j, j + d/2) for j = t, t + size, ...
template <typename Block>
DV_INLINE void Rope(Block& b, int64_t* x, int64_t d, const int16_t* cos_row,
                    const int16_t* sin_row) {
  const int64_t half = d / 2;
  ForEach(b, half, [&](int64_t j) {
    const int64_t x1 = x[j], x2 = x[j + half];
    x[j] = RoundingShiftRight(WrapAdd(WrapMul(x1, cos_row[j]), WrapMul(WrapNeg(x2), sin_row[j])),
                              kRopeFracBits);
    x[j + half] = RoundingShiftRight(
        WrapAdd(WrapMul(x2, cos_row[j + half]), WrapMul(x1, sin_row[j + half])), kRopeFracBits);
  });
  b.Sync();
}

// DiSwiglu.
template <typename Block>
DV_INLINE void Swiglu(Block& b, const int32_t* gate, const int32_t* up, int64_t n, int64_t tpos,
                      int64_t* y) {
  ForEach(b, n,
          [&](int64_t i) { y[i] = WrapMul(WrapMul(gate[i], DiSigmoid(gate[i], tpos)), up[i]); });
  b.Sync();
}

// RowOps::GreedyPick: the smallest v attaining the max of logits[v] * head_m[v]; 0 when every
// product is INT64_MIN.
template <typename Block>
DV_INLINE int32_t GreedyPick(Block& b, const int32_t* logits, const int64_t* head_m, int64_t n) {
  int64_t* best = b.shared();
  int64_t* id = b.shared() + b.size();
  const int64_t stride = b.size();
  b.Each([&](int t) {
    int64_t v_best = kInt64Min, i_best = 0;
    bool any = false;
    for (int64_t v = t; v < n; v += stride) {
      const int64_t scaled = WrapMul(logits[v], head_m[v]);
      if (!any || scaled > v_best) {  // strict: a thread's later ids lose ties
        v_best = scaled;
        i_best = v;
        any = true;
      }
    }
    best[t] = v_best;
    id[t] = any ? i_best : n;  // a thread without ids loses every tie
  });
  Tree(b, [&](int t, int u) {
    if (best[u] > best[t] || (best[u] == best[t] && id[u] < id[t])) {
      best[t] = best[u];
      id[t] = id[u];
    }
  });
  const int64_t r = id[0];
  b.Sync();
  return r >= n ? 0 : static_cast<int32_t>(r);
}

// RowOps::Attend: one query row over slots [0, n_slots) of one KV head. Scores one slot per
// thread step, DiSoftmax as two reductions and a write, the context one channel per thread step.
// Returns DI-Exp's tpos.
template <typename Block>
DV_INLINE int64_t Attend(Block& b, const int8_t* q8, const KvHeadView& kv, int64_t n_slots,
                         Dyadic scale, int32_t* scores, int64_t* exps, int32_t* probs,
                         int64_t* ctx) {
  const int64_t d = kv.head_dim, d4 = KvPaddedDim(d);
  ForEach(b, n_slots, [&](int64_t s) {
    int32_t acc = 0;
    for (int64_t j = 0; j < d; ++j) acc += q8[j] * kv.k[KvKOffset(s, j, d4)];
    scores[s] = acc;
  });
  b.Sync();
  // DiSoftmax with every slot valid: row_max starts at INT64_MIN + 1, as the plain loop's does.
  const int64_t row_max = Reduce(b, n_slots, kInt64Min + 1, MaxOp{},
                                 [&](int64_t s) { return static_cast<int64_t>(scores[s]); });
  const int64_t tpos = DiExpTpos(scale.m, scale.k);
  const int64_t denom = Max(Reduce(b, n_slots, 0, SumOp{},
                                   [&](int64_t s) {
                                     exps[s] = DiExp(WrapSub(scores[s], row_max), tpos);
                                     return exps[s];
                                   }),
                            1);
  ForEach(b, n_slots, [&](int64_t s) { probs[s] = SoftmaxProb(exps[s], denom); });
  b.Sync();
  ForEach(b, d, [&](int64_t j) {
    int64_t acc = 0;
    for (int64_t s = 0; s < n_slots; ++s) {
      acc = WrapAdd(acc, static_cast<int64_t>(probs[s]) * kv.v[KvVOffset(s, j, d4)]);
    }
    ctx[j] = acc;
  });
  b.Sync();
  return tpos;
}

}  // namespace dv::block

namespace dv {

// RowOps through the block programs above, each row on a HostBlock of `threads` threads: the
// device kernels' arithmetic as an execution path on the host (tests/engine/test_support.h
// EveryExecutionPath runs every model and edge test through it).
class BlockRowOps final : public RowOps {
 public:
  explicit BlockRowOps(int threads) : threads_(threads) {}
  int threads() const { return threads_; }

  void RmsNorm(const int32_t* x, int64_t n, int32_t* y) const override {
    block::HostBlock b(threads_);
    block::RmsNorm(b, x, n, static_cast<const int64_t*>(nullptr), y);
  }
  void RmsNormGamma(const int32_t* x, int64_t n, const int64_t* gamma_m,
                    int64_t* y) const override {
    block::HostBlock b(threads_);
    block::RmsNorm(b, x, n, gamma_m, y);
  }
  Dyadic QuantI8(const int64_t* x, int64_t n, int64_t m, int64_t k, int8_t* x8,
                 WrapCounter* wraps) const override {
    block::HostBlock b(threads_);
    bool wrapped = false;
    const Dyadic r = block::QuantI8(b, x, n, m, k, x8, &wrapped);
    if (wraps != nullptr && wrapped) ++wraps->events;
    return r;
  }
  int64_t RequantI32(const int32_t* p, const int64_t* col_m, int64_t n, int64_t target_bits,
                     int32_t* y) const override {
    block::HostBlock b(threads_);
    return block::RequantI32(b, p, col_m, n, target_bits, y);
  }
  Dyadic RequantI8RowColumn(const int64_t* p, const int64_t* col_m, int64_t n, int64_t row_m,
                            int64_t row_k, int64_t col_k, int64_t* s, int8_t* y8,
                            WrapCounter* wraps) const override {
    block::HostBlock b(threads_);
    bool wrapped = false;
    const Dyadic r =
        block::RequantI8RowColumn(b, p, col_m, n, row_m, row_k, col_k, s, y8, &wrapped);
    if (wraps != nullptr && wrapped) ++wraps->events;
    return r;
  }
  void RequantI8StaticRow(const int32_t* p, int64_t n, int64_t row_m, int64_t row_k,
                          const int64_t* col_m, int64_t col_k, int64_t s_m, int64_t s_k,
                          int8_t* y8) const override {
    block::HostBlock b(threads_);
    block::RequantI8StaticRow(b, p, n, row_m, row_k, col_m, col_k, s_m, s_k, y8);
  }
  void RequantI8StaticColumns(const int64_t* p, int64_t n, int64_t row_m, int64_t row_k,
                              const int64_t* s_m, const int64_t* s_k, int8_t* y8) const override {
    block::HostBlock b(threads_);
    block::RequantI8StaticColumns(b, p, n, row_m, row_k, s_m, s_k, y8);
  }
  int64_t AddResidual(int32_t* h, int64_t n, int64_t k_res, const int32_t* d, int64_t dm,
                      int64_t dk) const override {
    block::HostBlock b(threads_);
    return block::AddResidual(b, h, n, k_res, d, dm, dk);
  }
  void MulColumns(const int32_t* x, const int64_t* m, int64_t n, int64_t* y) const override {
    block::HostBlock b(threads_);
    block::MulColumns(b, x, m, n, y);
  }
  void MulColumns(const int64_t* x, const int64_t* m, int64_t n, int64_t* y) const override {
    block::HostBlock b(threads_);
    block::MulColumns(b, x, m, n, y);
  }
  void Rope(int64_t* x, int64_t d, const int16_t* cos_row, const int16_t* sin_row) const override {
    block::HostBlock b(threads_);
    block::Rope(b, x, d, cos_row, sin_row);
  }
  void Swiglu(const int32_t* gate, const int32_t* up, int64_t n, int64_t tpos,
              int64_t* y) const override {
    block::HostBlock b(threads_);
    block::Swiglu(b, gate, up, n, tpos, y);
  }
  int32_t GreedyPick(const int32_t* logits, const int64_t* head_m, int64_t n) const override {
    block::HostBlock b(threads_);
    return block::GreedyPick(b, logits, head_m, n);
  }
  int64_t Attend(const int8_t* q8, const KvHeadView& kv, int64_t n_slots, Dyadic scale,
                 int32_t* scores, int64_t* exps, int32_t* probs, int64_t* ctx) const override {
    block::HostBlock b(threads_);
    return block::Attend(b, q8, kv, n_slots, scale, scores, exps, probs, ctx);
  }

 private:
  int threads_;
};

}  // namespace dv
