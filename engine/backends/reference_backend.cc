#include "engine/backends/reference_backend.h"

#include <cstring>
#include <new>

namespace dv {
namespace {

class BorrowedWeight final : public PackedWeight {
 public:
  const int8_t* w8t = nullptr;
};

class ReferenceBackend final : public Backend {
 public:
  std::string_view Name() const override { return "reference"; }
  int NumThreads() const override { return 1; }

  std::unique_ptr<PackedWeight> PackWeight(const int8_t* w8t, int64_t k, int64_t n) override {
    auto w = std::make_unique<BorrowedWeight>();
    w->w8t = w8t;
    w->k = k;
    w->n = n;
    return w;
  }

  void MatmulI8(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c) override {
    const auto& bw = static_cast<const BorrowedWeight&>(w);
    MatmulI8Ref(a, m, w.k, bw.w8t, w.n, c);
  }

  void ParallelFor(int64_t n, RangeFn body) override {
    if (n > 0) body(0, n, 0);
  }
};

}  // namespace

void MatmulI8Ref(const int8_t* a, int64_t m, int64_t k, const int8_t* w8t, int64_t n, int32_t* c) {
  // c[i][j] = sum over kk of a[i][kk] * w8t[kk][j], exact in int32. Columns are taken in blocks
  // so the accumulators of a block stay in cache while every weight row of the block is read once
  // for all m activation rows (batched rows share the weight stream).
  constexpr int64_t kColumnBlock = 1024;
  std::memset(c, 0, static_cast<size_t>(m * n) * sizeof(int32_t));
  for (int64_t j0 = 0; j0 < n; j0 += kColumnBlock) {
    const int64_t j1 = j0 + kColumnBlock < n ? j0 + kColumnBlock : n;
    for (int64_t kk = 0; kk < k; ++kk) {
      const int8_t* wrow = w8t + kk * n;
      for (int64_t i = 0; i < m; ++i) {
        const int32_t av = a[i * k + kk];
        if (av == 0) continue;
        int32_t* ci = c + i * n;
        for (int64_t j = j0; j < j1; ++j) ci[j] += av * wrow[j];
      }
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
