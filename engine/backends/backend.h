// The backend interface: the only code that differs between backends (DESIGN.md §2).
// A backend multiplies int8 activations by prepared int8 weights into exact int32, runs
// row-parallel work, and may supply faster per-row operations. Every backend must give the
// reference backend's bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/backends/backend_error.h"
#include "engine/backends/row_ops.h"

namespace dv {

struct ForwardRow;
struct ModelWeights;
struct WrapEvents;

// A backend's own forward pass (Backend::MakeResidentForward): IntQwen3::Forward's contract
// (engine/model.h) for calls without a trace, on rows whose K/V caches came from the backend's
// AllocateKvStorage. Adds the call's wrap events to *wraps; throws ArithmeticError where the
// call divides by zero, with the rows' caches left as they were.
class ResidentForward {
 public:
  virtual ~ResidentForward() = default;
  // IntQwen3::Forward's rows after its checks (tokens, ids, capacities, positions): a resident
  // pass does not check them again.
  virtual void Forward(std::span<ForwardRow> rows, WrapEvents* wraps) = 0;
};

// A borrowed callable: two pointers, so passing a lambda never allocates (std::function would
// for captures beyond its small buffer, once per call in the decode loop). Valid only while the
// callable it refers to lives; a temporary lambda passed straight to a call lives until the call
// returns.
template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef>)
      FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): binds lambdas at call sites
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_(&Invoke<std::remove_reference_t<F>>) {}
  R operator()(Args... args) const { return call_(obj_, args...); }

 private:
  template <typename F>
  static R Invoke(void* obj, Args... args) {
    return (*static_cast<F*>(obj))(args...);
  }
  void* obj_;
  R (*call_)(void*, Args...);
};

// body(begin, end, thread) of a ParallelFor.
using RangeFn = FunctionRef<void(int64_t begin, int64_t end, int thread)>;

// The bytes of one row's K/V cache (engine/model.h KvCache), in memory the backend's kernels
// read: zero-filled, 64-byte aligned, valid while the object lives. Each backend decides where it
// lives (the cpu backend: huge pages; a GPU backend: device memory).
class KvStorage {
 public:
  virtual ~KvStorage() = default;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 protected:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A weight matrix in the layout a backend's kernels read. Created once at load time.
class PackedWeight {
 public:
  virtual ~PackedWeight() = default;
  int64_t k = 0;  // inner (input) dimension
  int64_t n = 0;  // output dimension
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view Name() const = 0;
  // Threads that ParallelFor may use; thread indices passed to its body are < NumThreads().
  virtual int NumThreads() const = 0;

  // Prepares w8t ([k, n] int8 row-major, the artifact's [in, out] layout); w8t must outlive the
  // result when the backend borrows it.
  virtual std::unique_ptr<PackedWeight> PackWeight(const int8_t* w8t, int64_t k, int64_t n) = 0;

  // c[m, n] = a[m, k] * W, exact int32 (callers guarantee k * 127^2 < 2^31).
  virtual void MatmulI8(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c) = 0;

  // c[i] = a * w[i] for each i: weights that share their input and inner dimension (q, k and v;
  // gate and up). One call lets a backend stream them as one matrix; the default is one
  // MatmulI8 each.
  virtual void MatmulI8Fused(const int8_t* a, int64_t m, std::span<const PackedWeight* const> w,
                             std::span<int32_t* const> c) {
    for (size_t i = 0; i < w.size(); ++i) MatmulI8(a, m, *w[i], c[i]);
  }

  // Calls body(begin, end, thread) over disjoint ranges covering [0, n). Bodies must write
  // disjoint outputs; results must not depend on how the range is split. Bodies must not throw
  // and must not call ParallelFor again.
  virtual void ParallelFor(int64_t n, RangeFn body) = 0;

  // Runs fn() as one parallel region (a forward pass): the ParallelFor calls and products fn
  // makes from the calling thread may share one set of running threads instead of starting each
  // anew, and threads without work may load what the next product reads (WillMultiply). fn may
  // throw; the exception propagates once the region is over. Only the speed may differ from
  // calling fn() directly (the default).
  virtual void RunRegion(FunctionRef<void()> fn) { fn(); }

  // A hint: the next MatmulI8Fused (or MatmulI8) call multiplies by these weights, in this
  // order. Inside a region a backend may start reading them while the caller does other work.
  // Never changes a result; the default ignores it.
  virtual void WillMultiply(std::span<const PackedWeight* const> w) { static_cast<void>(w); }

  // The per-row operations the model runs between GEMMs (engine/backends/row_ops.h). The
  // default is the plain definitions; a backend returns its own only if every operation gives
  // the same bits.
  virtual const RowOps& row_ops() const {
    static const RowOps plain;
    return plain;
  }

  // What a run records about the device this backend computes on, beside the host's fingerprint
  // (its "gpu" object): key/value pairs such as name, compute_capability, driver, and
  // gemm_algorithms (the kernel chosen per GEMM shape so far, which is no fact of the machine and
  // so no part of its machine id). Empty for the backends that compute on the host's CPU.
  virtual std::vector<std::pair<std::string, std::string>> DeviceFacts() const { return {}; }

  // A backend that runs whole forward passes on its own device -- the weights, the activations
  // and the K/V caches in its memory, one launch after another with no host work between the
  // embedding and the logits -- returns that program here, and IntQwen3 hands it every forward
  // call without a trace (a traced call runs through the products and row operations above,
  // which must then reach the same caches). Null, the default: IntQwen3 runs every pass itself.
  virtual std::unique_ptr<ResidentForward> MakeResidentForward(const ModelWeights& weights) {
    static_cast<void>(weights);
    return nullptr;
  }

  // `bytes` of zero-filled K/V cache storage. The default is ordinary heap memory. Throws
  // std::bad_alloc when the memory cannot be had.
  virtual std::unique_ptr<KvStorage> AllocateKvStorage(size_t bytes);
};

}  // namespace dv
