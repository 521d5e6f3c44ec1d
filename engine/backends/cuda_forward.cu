#include "engine/backends/cuda_forward.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "engine/backends/cuda_check.h"
#include "engine/backends/device_forward.h"

namespace dv {
namespace {

// block::HostBlock's interface on the device: the calling thread's own id, __syncthreads(), the
// block's dynamic shared memory. Its methods are host-device so the block programs (host-device
// templates) compile for both sides; only the device side is ever called.
struct DeviceBlock {
  int64_t* slots;
  DV_INLINE int size() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(blockDim.x);
#else
    return 1;
#endif
  }
  template <typename F>
  DV_INLINE void Each(F&& f) {
#if defined(__CUDA_ARCH__)
    f(static_cast<int>(threadIdx.x));
#else
    f(0);
#endif
  }
  DV_INLINE void Sync() {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
  }
  DV_INLINE int64_t* shared() { return slots; }
};

// One block per item; blocks past the grid's size take further items in strides.
template <typename Step>
__global__ void __launch_bounds__(kCudaMaxStepThreads) StepKernel(Step step, int64_t items) {
  extern __shared__ int64_t slots[];
  DeviceBlock b{slots};
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    step(b, item);
    b.Sync();  // the next item's first phase may write the shared slots
  }
}

// The executor of device_forward.h on the backend's stream.
class CudaExec {
 public:
  CudaExec(CudaGemmDevice& gemm, const CudaResidentOptions& o)
      : gemm_(gemm), stream_(gemm.DeviceStream()), graphs_(o.graphs), threads_(o.step_threads) {}
  ~CudaExec() { Forget(); }
  CudaExec(const CudaExec&) = delete;
  CudaExec& operator=(const CudaExec&) = delete;

  void* Alloc(size_t bytes) {
    void* p = nullptr;
    CudaCheck(cudaMalloc(&p, bytes), "cudaMalloc (resident forward)");
    const cudaError_t e = cudaMemset(p, 0, bytes);
    if (e != cudaSuccess) {
      cudaFree(p);
      ThrowCuda(e, "cudaMemset");
    }
    return p;
  }
  void Free(void* p) { cudaFree(p); }
  void Upload(void* dst, const void* src, size_t bytes) {
    CudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_),
              "copy to the device");
  }
  void Download(void* dst, const void* src, size_t bytes) {
    CudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
              "copy to the host");
    CudaCheck(cudaStreamSynchronize(stream_), "running the forward pass");
  }
  void Zero(void* dst, size_t bytes) {
    CudaCheck(cudaMemsetAsync(dst, 0, bytes, stream_), "cudaMemsetAsync");
  }
  std::unique_ptr<PackedWeight> Pack(const int8_t* w8t, int64_t k, int64_t n) {
    return gemm_.PackForDevice(w8t, k, n);
  }
  void Gemm(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c) {
    gemm_.GemmOnDevice(a, m, w, c);
  }
  int64_t GemmRows(int64_t m) const { return gemm_.GemmRowsOnDevice(m); }

  template <typename Step>
  void Launch(int64_t items, const Step& step) {
    if (items <= 0) return;
    const auto blocks = static_cast<unsigned>(std::min<int64_t>(items, int64_t{1} << 20));
    const auto threads = static_cast<unsigned>(threads_);
    StepKernel<Step><<<blocks, threads, 2 * threads * sizeof(int64_t), stream_>>>(step, items);
    CudaCheck(cudaGetLastError(), "launching a forward step");
  }

  // Decode shapes as graphs: the first call of a shape runs eagerly (the GEMM plans, cuBLASLt's
  // heuristic queries and any lazy initialization happen then, outside a capture), the second
  // is captured and replayed, and so is every later one.
  template <typename F>
  void Run(int64_t tokens, int64_t gathered, F enqueue) {
    if (!graphs_ || tokens > kCudaGraphMaxTokens) {
      enqueue();
      return;
    }
    const auto key = std::make_pair(tokens, gathered);
    if (seen_.insert(key).second) {
      enqueue();
      return;
    }
    auto found = graphs_by_shape_.find(key);
    if (found == graphs_by_shape_.end()) {
      CudaCheck(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "graph capture");
      cudaGraph_t graph = nullptr;
      try {
        enqueue();
      } catch (...) {
        cudaStreamEndCapture(stream_, &graph);
        if (graph != nullptr) cudaGraphDestroy(graph);
        throw;
      }
      CudaCheck(cudaStreamEndCapture(stream_, &graph), "graph capture");
      cudaGraphExec_t exec = nullptr;
      const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
      CudaCheck(e, "cudaGraphInstantiate");
      found = graphs_by_shape_.emplace(key, exec).first;
    }
    CudaCheck(cudaGraphLaunch(found->second, stream_), "cudaGraphLaunch");
  }
  void Forget() {
    for (auto& [key, exec] : graphs_by_shape_) cudaGraphExecDestroy(exec);
    graphs_by_shape_.clear();
    seen_.clear();
  }
  void Finish() { CudaCheck(cudaStreamSynchronize(stream_), "running the forward pass"); }

 private:
  CudaGemmDevice& gemm_;
  CUstream_st* stream_;
  bool graphs_;
  int threads_;
  std::set<std::pair<int64_t, int64_t>> seen_;
  std::map<std::pair<int64_t, int64_t>, cudaGraphExec_t> graphs_by_shape_;
};

class CudaResidentForward final : public ResidentForward {
 public:
  CudaResidentForward(const ModelWeights& w, CudaGemmDevice& gemm, const CudaResidentOptions& o)
      : exec_(gemm, o), program_(w, exec_) {}
  void Forward(std::span<ForwardRow> rows, WrapEvents* wraps) override {
    program_.Forward(rows, wraps);
  }

 private:
  CudaExec exec_;  // before the program, which frees its memory through it
  device::DeviceForward<CudaExec> program_;
};

}  // namespace

std::unique_ptr<ResidentForward> MakeCudaResidentForward(const ModelWeights& weights,
                                                         CudaGemmDevice& gemm,
                                                         const CudaResidentOptions& options) {
  return std::make_unique<CudaResidentForward>(weights, gemm, options);
}

}  // namespace dv
