// The cuda backend's resident forward pass: engine/backends/device_forward.h's program on a GPU.
// Its steps are CUDA kernels, one block of threads per work item (engine/backends/cuda_forward.cu),
// its GEMMs the backend's own (cuBLASLt or dp4a on device pointers), its K/V caches the
// backend's. A decode call of up to kCudaGraphMaxTokens tokens is captured once per shape as a
// CUDA graph (at the shape's second call; the first runs eagerly) and replayed afterwards
// (prefill runs eagerly). No CUDA header is needed here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/backends/backend.h"

struct CUstream_st;

namespace dv {

// What the resident program needs from the cuda backend: its packed weights and its GEMMs on
// device operands, in the row strides of the device program (a [m, Pad4(k)], c [m, Pad4(n)]),
// enqueued on its stream.
class CudaGemmDevice {
 public:
  virtual ~CudaGemmDevice() = default;
  virtual std::unique_ptr<PackedWeight> PackForDevice(const int8_t* w8t, int64_t k, int64_t n) = 0;
  virtual void GemmOnDevice(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c) = 0;
  // Rows to allocate for a GEMM operand of m rows (the plan's padded token count and the guard
  // rows cuBLASLt's kernels may read).
  virtual int64_t GemmRowsOnDevice(int64_t m) const = 0;
  virtual CUstream_st* DeviceStream() const = 0;
};

// Decode calls of at most this many tokens run as CUDA graphs when graphs are on.
inline constexpr int64_t kCudaGraphMaxTokens = 16;
// Threads of each step's block: kCudaStepThreads unless the options say otherwise, at most
// kCudaMaxStepThreads (the kernels' launch bound: up to 128 registers a thread, where the step
// kernels use 18-62 on sm_80 and sm_90 without spilling, cuobjdump --dump-resource-usage;
// CudaBackendSass.NoKernelSpillsAndStepKernelsFitTheirBound holds it where cuobjdump is).
inline constexpr int kCudaStepThreads = 128;
inline constexpr int kCudaMaxStepThreads = 512;

struct CudaResidentOptions {
  bool graphs = true;
  int step_threads = kCudaStepThreads;
};

// Throws BackendError when the device refuses (memory, a launch).
std::unique_ptr<ResidentForward> MakeCudaResidentForward(const ModelWeights& weights,
                                                         CudaGemmDevice& gemm,
                                                         const CudaResidentOptions& options);

}  // namespace dv
