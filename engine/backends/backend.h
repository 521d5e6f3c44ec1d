// The backend interface: the only code that differs between backends (DESIGN.md §2).
// A backend multiplies int8 activations by prepared int8 weights into exact int32 and runs
// row-parallel work. Every backend must give the reference backend's bits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace dv {

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

  // Calls body(begin, end, thread) over disjoint ranges covering [0, n). Bodies must write
  // disjoint outputs; results must not depend on how the range is split.
  virtual void ParallelFor(int64_t n,
                           const std::function<void(int64_t, int64_t, int)>& body) = 0;
};

}  // namespace dv
