#include "float_engine/cuda_fp16_linear.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "checkpoint/half_float.h"
#include "cuda_device/cuda_device.h"
#include "float_engine/float_model.h"

namespace dv {
namespace {

void CudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw FloatEngineError(std::string("float engine on cuda: ") + what + ": " +
                           cudaGetErrorString(e));
  }
}

void BlasCheck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw FloatEngineError(std::string("float engine on cuda: ") + what + ": " +
                           cublasGetStatusString(s));
  }
}

// Owners of the stream and the cuBLAS handle: a constructor that throws half way leaves nothing
// behind.
struct BlasDeleter {
  void operator()(cublasHandle_t h) const { cublasDestroy(h); }
};
using BlasHandle = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, BlasDeleter>;

// A device allocation of fp16 values that grows to the largest request.
class DeviceHalves {
 public:
  DeviceHalves() = default;
  DeviceHalves(const DeviceHalves&) = delete;
  DeviceHalves& operator=(const DeviceHalves&) = delete;
  DeviceHalves(DeviceHalves&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  DeviceHalves& operator=(DeviceHalves&& o) noexcept {
    if (this != &o) {
      Release();
      std::swap(data_, o.data_);
      std::swap(size_, o.size_);
    }
    return *this;
  }
  ~DeviceHalves() { Release(); }
  void Release() {
    if (data_) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }
  uint16_t* Reserve(size_t n) {
    if (n > size_) {
      Release();
      CudaCheck(cudaMalloc(reinterpret_cast<void**>(&data_), n * sizeof(uint16_t)), "cudaMalloc");
      size_ = n;
    }
    return data_;
  }
  uint16_t* data() const { return data_; }

 private:
  uint16_t* data_ = nullptr;
  size_t size_ = 0;
};

class CudaFp16Linear final : public FloatLinearBackend {
 public:
  explicit CudaFp16Linear(const CudaFp16LinearOptions& options) {
    if (const std::string why = SelectCudaDevice(options.device); !why.empty()) {
      throw FloatEngineError("float engine on cuda: " + why);
    }
    CudaCheck(cudaGetDeviceProperties(&props_, options.device), "cudaGetDeviceProperties");
    std::string error;
    stream_ = MakeCudaStream(&error);
    if (!stream_) throw FloatEngineError("float engine on cuda: " + error);
    cublasHandle_t handle = nullptr;
    BlasCheck(cublasCreate(&handle), "cublasCreate");
    handle_.reset(handle);
    BlasCheck(cublasSetStream(handle_.get(), stream_.get()), "cublasSetStream");
    // torch's default for fp16: tensor cores, reduced-precision reductions allowed.
    BlasCheck(cublasSetMathMode(handle_.get(), CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    int version = 0;
    BlasCheck(cublasGetVersion(handle_.get(), &version), "cublasGetVersion");
    description_ =
        "cuBLAS " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) +
        " cublasGemmEx fp16 in/out, fp32 accumulation, default algorithm, on " + props_.name +
        " (sm_" + std::to_string(props_.major) + std::to_string(props_.minor) + ")";
  }

  ~CudaFp16Linear() override {
    // The stream's queued work finishes before the buffers it uses are freed.
    if (stream_) cudaStreamSynchronize(stream_.get());
  }

  void AddWeight(const float* w, int64_t n, int64_t k) override {
    std::vector<uint16_t> halves(static_cast<size_t>(n * k));
    for (size_t i = 0; i < halves.size(); ++i) halves[i] = FloatToF16Bits(w[i]);
    Weight weight;
    weight.n = n;
    weight.k = k;
    uint16_t* device = weight.data.Reserve(halves.size());
    CudaCheck(
        cudaMemcpy(device, halves.data(), halves.size() * sizeof(uint16_t), cudaMemcpyHostToDevice),
        "weight upload");
    weights_.insert_or_assign(w, std::move(weight));
  }

  void Linear(const float* x, int64_t ldx, int64_t m, int64_t k, const float* w, int64_t n,
              float* y, int64_t ldy) override {
    const auto it = weights_.find(w);
    if (it == weights_.end() || it->second.n != n || it->second.k != k) {
      throw FloatEngineError("float engine on cuda: a GEMM on a weight that was not uploaded");
    }
    host_x_.resize(static_cast<size_t>(m * k));
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < k; ++c)
        host_x_[static_cast<size_t>(r * k + c)] = FloatToF16Bits(x[r * ldx + c]);
    }
    uint16_t* dx = x_.Reserve(host_x_.size());
    uint16_t* dy = y_.Reserve(static_cast<size_t>(m * n));
    CudaCheck(cudaMemcpyAsync(dx, host_x_.data(), host_x_.size() * sizeof(uint16_t),
                              cudaMemcpyHostToDevice, stream_.get()),
              "activation upload");
    // Row-major y[m, n] = x[m, k] . w[n, k]^T is column-major y^T (n x m) = W^T(k x n)^T . x^T:
    // A = w read transposed (lda = k), B = x as it lies (ldb = k), C column-major n x m.
    const float alpha = 1.0f, beta = 0.0f;
    BlasCheck(
        cublasGemmEx(handle_.get(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n),
                     static_cast<int>(m), static_cast<int>(k), &alpha, it->second.data.data(),
                     CUDA_R_16F, static_cast<int>(k), dx, CUDA_R_16F, static_cast<int>(k), &beta,
                     dy, CUDA_R_16F, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
    host_y_.resize(static_cast<size_t>(m * n));
    CudaCheck(cudaMemcpyAsync(host_y_.data(), dy, host_y_.size() * sizeof(uint16_t),
                              cudaMemcpyDeviceToHost, stream_.get()),
              "result download");
    CudaCheck(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c)
        y[r * ldy + c] = F16BitsToFloat(host_y_[static_cast<size_t>(r * n + c)]);
    }
  }

  std::string Description() const override { return description_; }

  std::vector<std::pair<std::string, std::string>> DeviceFacts() const override {
    int driver = 0, runtime = 0, version = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cublasGetVersion(handle_.get(), &version);
    return {
        {"name", props_.name},
        {"compute_capability", std::to_string(props_.major) + "." + std::to_string(props_.minor)},
        {"memory_bytes", std::to_string(props_.totalGlobalMem)},
        {"driver", std::to_string(driver)},
        {"runtime", std::to_string(runtime)},
        {"cublas", std::to_string(version)},
        {"gemm", "cublasGemmEx fp16, fp32 accumulation, CUBLAS_GEMM_DEFAULT"},
    };
  }

 private:
  struct Weight {
    DeviceHalves data;
    int64_t n = 0, k = 0;
  };
  cudaDeviceProp props_{};
  // Before the buffers below, so destroyed after them.
  CudaStream stream_;
  BlasHandle handle_;
  std::unordered_map<const float*, Weight> weights_;
  DeviceHalves x_, y_;
  std::vector<uint16_t> host_x_, host_y_;
  std::string description_;
};

}  // namespace

std::shared_ptr<FloatLinearBackend> MakeCudaFp16Linear(const CudaFp16LinearOptions& options) {
  return std::make_shared<CudaFp16Linear>(options);
}

}  // namespace dv
