#include "engine/backends/reference_backend.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "engine/model_weights.h"

namespace dv {
namespace {

// The reference backend's copy of a weight: transposed to [n, k], so that each output is one
// contiguous dot product that the compiler vectorizes on its own (no intrinsics here).
class TransposedWeight final : public PackedWeight {
 public:
  std::vector<int8_t> wt;  // [n, k]
};

// Rows of activations per pass over the weights: their int16 copy (rows x k, k <= 3072 for
// Qwen3-0.6B) stays in the L2 cache while every weight column is read once for all of them.
constexpr int64_t kRowBlock = 32;

// The compiler builds the dot product loops for wider vector units too and picks one at load
// time (GCC's target_clones on x86-64): the same plain C++, the same exact int32 sums.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DV_REFERENCE_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define DV_REFERENCE_CLONES
#endif

// Weight bytes asked for ahead of the ones being read. A core's hardware prefetchers alone keep
// too few misses in flight to stream a large weight at the memory's speed (batch-1 decode read
// 6 GB/s of weights on one core of the Intel Xeon host, 20 GB/s from L2); a prefetch is a hint
// that changes no result.
constexpr int64_t kPrefetchAhead = 2048;

// Weight bytes per prefetch step: four cache lines, so the inner loop is long enough that its
// vector sum is not folded into the accumulator too often.
constexpr int64_t kChunk = 256;

// Prefetches the chunk kPrefetchAhead past w[k0], if w runs on that far (w_left bytes).
inline void Prefetch(const int8_t* w, int64_t k0, int64_t w_left) {
  for (int64_t line = 0; line < kChunk; line += 64) {
    const int64_t at = k0 + kPrefetchAhead + line;
    if (at < w_left) __builtin_prefetch(w + at);
  }
}

// c[i][j] = sum over kk of x[i][kk] * w[kk] for rows i of one block, one weight column w, whose
// bytes from w run on for `w_left` more (the next columns: prefetched past the column's end).
// Products of int16 operands summed into int32 are the pattern compilers turn into
// multiply-add instructions; four rows at a time share each weight load, and each chunk of
// weight bytes comes with a prefetch of the chunk kPrefetchAhead on.
DV_REFERENCE_CLONES void DotColumn(const int16_t* x, int64_t rows, int64_t k, const int8_t* w,
                                   int64_t w_left, int32_t* c, int64_t c_stride) {
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const int16_t* x0 = x + i * k;
    const int16_t* x1 = x0 + k;
    const int16_t* x2 = x1 + k;
    const int16_t* x3 = x2 + k;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      if (i == 0) Prefetch(w, k0, w_left);
      const int64_t k1 = std::min(k, k0 + kChunk);
      for (int64_t kk = k0; kk < k1; ++kk) {
        const int16_t wv = w[kk];
        a0 += x0[kk] * wv;
        a1 += x1[kk] * wv;
        a2 += x2[kk] * wv;
        a3 += x3[kk] * wv;
      }
    }
    c[i * c_stride] = a0;
    c[(i + 1) * c_stride] = a1;
    c[(i + 2) * c_stride] = a2;
    c[(i + 3) * c_stride] = a3;
  }
  for (; i < rows; ++i) {
    const int16_t* xi = x + i * k;
    int32_t acc = 0;
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      if (i == 0) Prefetch(w, k0, w_left);
      const int64_t k1 = std::min(k, k0 + kChunk);
      for (int64_t kk = k0; kk < k1; ++kk) acc += xi[kk] * static_cast<int16_t>(w[kk]);
    }
    c[i * c_stride] = acc;
  }
}

// The reference backend's attention: the same A14-A17 as RowOps::Attend, with loops laid out so
// that the compiler vectorizes them (plain C++, no intrinsics; the row operations other than
// attention are RowOps' own definitions).
class ReferenceRowOps final : public RowOps {
 public:
  int64_t Attend(const int8_t* q8, const KvHeadView& kv, int64_t n_slots, Dyadic scale,
                 int32_t* scores, int64_t* exps, int32_t* probs, int64_t* ctx) const override {
    const int64_t d = kv.head_dim, d4 = KvPaddedDim(d);
    // A14, a block of 16 slots at a time: their K bytes are [d4/4][16][4], so with q repeated
    // as qrep[j/4][16][j%4] every block is one contiguous multiply-accumulate into 64 int32
    // lanes, 4 of them per slot. Bytes past the row's slots are read but never used.
    thread_local std::vector<int16_t> qrep;
    thread_local std::vector<int32_t> part;
    if (qrep.size() < static_cast<size_t>(d4 * kKvSlotBlock)) {
      qrep.resize(static_cast<size_t>(d4 * kKvSlotBlock));
    }
    // 64 lanes for a K block, 4 per channel for V.
    if (part.size() < static_cast<size_t>(std::max<int64_t>(64, 4 * d4))) {
      part.resize(static_cast<size_t>(std::max<int64_t>(64, 4 * d4)));
    }
    for (int64_t jb = 0; jb < d4 / 4; ++jb) {
      for (int64_t i = 0; i < 64; ++i) {
        const int64_t j = jb * 4 + i % 4;
        qrep[static_cast<size_t>(jb * 64 + i)] = j < d ? q8[j] : 0;
      }
    }
    int32_t* lanes = part.data();
    for (int64_t s0 = 0; s0 < n_slots; s0 += kKvSlotBlock) {
      const int8_t* kb = kv.k + s0 * d4;  // KvKOffset(s0, 0, d4)
      for (int64_t i = 0; i < 64; ++i) lanes[i] = 0;
      for (int64_t jb = 0; jb < d4 / 4; ++jb) {
        const int16_t* qr = qrep.data() + jb * 64;
        const int8_t* kr = kb + jb * 64;
        for (int64_t i = 0; i < 64; ++i) lanes[i] += qr[i] * static_cast<int16_t>(kr[i]);
      }
      const int64_t n = std::min(kKvSlotBlock, n_slots - s0);
      for (int64_t s = 0; s < n; ++s) {
        scores[s0 + s] = lanes[4 * s] + lanes[4 * s + 1] + lanes[4 * s + 2] + lanes[4 * s + 3];
      }
    }
    const int64_t tpos = DiSoftmax(scores, nullptr, n_slots, scale.m, scale.k, exps, probs);
    // A17. Probabilities are in [0, 2^14] (DiSoftmax), so every product fits int16 x int16 and
    // the whole sum |ctx| <= 128 * (2^14 + n_slots / 2) fits int32 (docs/SPEC.md §6.4, A17);
    // the plain int64 definition covers any other input.
    bool in_range = true;
    for (int64_t s = 0; s < n_slots; ++s) in_range &= probs[s] >= 0 && probs[s] <= kProbOne;
    if (!in_range || n_slots > kMaxRowSlots) {
      ProbTimesVPlain(probs, kv, n_slots, ctx);
      return tpos;
    }
    // V bytes are [slot/4][d4][slot%4]: 4 slots' probabilities against one contiguous group.
    for (int64_t i = 0; i < 4 * d4; ++i) lanes[i] = 0;
    for (int64_t s0 = 0; s0 < n_slots; s0 += 4) {
      int16_t p[4];
      for (int64_t r = 0; r < 4; ++r) {
        p[r] = s0 + r < n_slots ? static_cast<int16_t>(probs[s0 + r]) : int16_t{0};
      }
      const int8_t* vb = kv.v + s0 * d4;  // KvVOffset(s0, 0, d4)
      for (int64_t j = 0; j < d; ++j) {
        lanes[4 * j] += p[0] * static_cast<int16_t>(vb[4 * j]);
        lanes[4 * j + 1] += p[1] * static_cast<int16_t>(vb[4 * j + 1]);
        lanes[4 * j + 2] += p[2] * static_cast<int16_t>(vb[4 * j + 2]);
        lanes[4 * j + 3] += p[3] * static_cast<int16_t>(vb[4 * j + 3]);
      }
    }
    for (int64_t j = 0; j < d; ++j) {
      ctx[j] = static_cast<int64_t>(lanes[4 * j]) + lanes[4 * j + 1] + lanes[4 * j + 2] +
               lanes[4 * j + 3];
    }
    return tpos;
  }

 private:
  static void ProbTimesVPlain(const int32_t* probs, const KvHeadView& kv, int64_t n_slots,
                              int64_t* ctx) {
    const int64_t d4 = KvPaddedDim(kv.head_dim);
    for (int64_t j = 0; j < kv.head_dim; ++j) {
      int64_t acc = 0;
      for (int64_t s = 0; s < n_slots; ++s) {
        acc = WrapAdd(acc, static_cast<int64_t>(probs[s]) * kv.v[KvVOffset(s, j, d4)]);
      }
      ctx[j] = acc;
    }
  }
};

class ReferenceBackend final : public Backend {
 public:
  const RowOps& row_ops() const override { return ops_; }
  std::string_view Name() const override { return "reference"; }
  int NumThreads() const override { return 1; }

  std::unique_ptr<PackedWeight> PackWeight(const int8_t* w8t, int64_t k, int64_t n) override {
    auto w = std::make_unique<TransposedWeight>();
    w->k = k;
    w->n = n;
    w->wt.resize(static_cast<size_t>(k * n));
    // Tiles of 64 x 64 keep both the rows read and the rows written in cache.
    constexpr int64_t kTile = 64;
    for (int64_t k0 = 0; k0 < k; k0 += kTile) {
      for (int64_t j0 = 0; j0 < n; j0 += kTile) {
        for (int64_t kk = k0; kk < std::min(k, k0 + kTile); ++kk) {
          for (int64_t j = j0; j < std::min(n, j0 + kTile); ++j) {
            w->wt[static_cast<size_t>(j * k + kk)] = w8t[kk * n + j];
          }
        }
      }
    }
    return w;
  }

  void MatmulI8(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c) override {
    const auto& tw = static_cast<const TransposedWeight&>(w);
    const int64_t k = w.k, n = w.n;
    if (x16_.size() < static_cast<size_t>(std::min(m, kRowBlock) * k)) {
      x16_.resize(static_cast<size_t>(std::min(m, kRowBlock) * k));
    }
    for (int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
      const int64_t rows = std::min(kRowBlock, m - i0);
      std::copy_n(a + i0 * k, rows * k, x16_.data());  // int8 -> int16, exact
      for (int64_t j = 0; j < n; ++j) {
        DotColumn(x16_.data(), rows, k, tw.wt.data() + j * k, (n - j) * k, c + i0 * n + j, n);
      }
    }
  }

  void ParallelFor(int64_t n, RangeFn body) override {
    if (n > 0) body(0, n, 0);
  }

 private:
  ReferenceRowOps ops_;
  std::vector<int16_t> x16_;  // one block of activation rows, widened
};

}  // namespace

void MatmulI8Ref(const int8_t* a, int64_t m, int64_t k, const int8_t* w8t, int64_t n, int32_t* c) {
  // c[i][j] = sum over kk of a[i][kk] * w8t[kk][j], exact in int32: the obvious triple loop,
  // the definition the kernels are compared with.
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int32_t acc = 0;
      for (int64_t kk = 0; kk < k; ++kk) acc += a[i * k + kk] * w8t[kk * n + j];
      c[i * n + j] = acc;
    }
  }
}

std::unique_ptr<Backend> MakeReferenceBackend() { return std::make_unique<ReferenceBackend>(); }

namespace {

// Zeroed heap memory, aligned for the widest vector loads a kernel might use on it.
class HeapKvStorage final : public KvStorage {
 public:
  explicit HeapKvStorage(size_t bytes) {
    constexpr std::align_val_t kAlign{64};
    const size_t n = bytes > 0 ? bytes : 1;
    data_ = static_cast<uint8_t*>(::operator new(n, kAlign));
    std::memset(data_, 0, n);
    size_ = bytes;
  }
  ~HeapKvStorage() override { ::operator delete (data_, std::align_val_t{64}); }
};

}  // namespace

std::unique_ptr<KvStorage> Backend::AllocateKvStorage(size_t bytes) {
  return std::make_unique<HeapKvStorage>(bytes);
}

}  // namespace dv
