// The seam where a float row's linear layers can leave the host: FloatQwen3 hands every weight
// matrix to the backend once at load (so a device backend keeps them resident) and each
// projection's y = x . w^T to it during a forward pass. Everything else the engine computes on
// the host. The cuda implementation (float_engine/cuda_fp16_linear.h) runs cuBLAS fp16 GEMMs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dv {

class FloatLinearBackend {
 public:
  virtual ~FloatLinearBackend() = default;
  // w: [n, k] row-major, values already in the engine's dtype; it outlives the backend's use.
  virtual void AddWeight(const float* w, int64_t n, int64_t k) = 0;
  // y[m, n] = x[m, k] . w[n, k]^T for a w given to AddWeight; x rows ldx apart, y rows ldy apart.
  virtual void Linear(const float* x, int64_t ldx, int64_t m, int64_t k, const float* w, int64_t n,
                      float* y, int64_t ldy) = 0;
  // What runs the GEMMs, for the run's fingerprint ("cuBLAS 13.0 cublasGemmEx fp16 ... on ...").
  virtual std::string Description() const = 0;
  // The device it computes on, for the run's fingerprint ("gpu"): name, compute_capability,
  // memory_bytes, driver, runtime and the library's version.
  virtual std::vector<std::pair<std::string, std::string>> DeviceFacts() const = 0;
};

}  // namespace dv
