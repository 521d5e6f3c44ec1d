#include "engine/backends/cuda_backend.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "base/check.h"
#include "cuda_device/cuda_device.h"
#include "engine/backends/cpu_backend.h"
#include "engine/backends/cuda_check.h"
#include "engine/backends/cuda_forward.h"
#include "engine/backends/cuda_gemm_dp4a.h"

namespace dv {
namespace {

void LtCheck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw BackendError(std::string("cuda backend: cuBLASLt ") + what + ": " +
                       cublasLtGetStatusString(s));
  }
}

// Owners of the CUDA and cuBLASLt handles: a constructor that throws half way leaves nothing
// behind (members already made are destroyed; a raw handle would leak).
struct LtDeleter {
  void operator()(cublasLtHandle_t h) const { cublasLtDestroy(h); }
};
struct DescDeleter {
  void operator()(cublasLtMatmulDesc_t d) const { cublasLtMatmulDescDestroy(d); }
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayout_t l) const { cublasLtMatrixLayoutDestroy(l); }
};
struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using LtHandle = std::unique_ptr<std::remove_pointer_t<cublasLtHandle_t>, LtDeleter>;
using MatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, DescDeleter>;
using Layout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, LayoutDeleter>;
using Preference =
    std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, PreferenceDeleter>;

Layout MakeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, const char* what) {
  cublasLtMatrixLayout_t l = nullptr;
  LtCheck(cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows),
                                     static_cast<uint64_t>(cols), ld),
          what);
  return Layout(l);
}

// Device memory, freed with the object. Zero-filled when made, so the spare rows after an
// operand's end read as zeros.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    CudaCheck(cudaMalloc(&p_, bytes), "cudaMalloc");
    CudaCheck(cudaMemset(p_, 0, bytes), "cudaMemset");
  }
  ~DeviceBuffer() {
    if (p_ != nullptr) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t size() const { return bytes_; }
  // Grows (contents lost) to at least `bytes`.
  void Reserve(size_t bytes) {
    if (bytes > bytes_) *this = DeviceBuffer(bytes);
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory: the staging buffers of the copies to and from the device.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() {
    if (p_ != nullptr) cudaFreeHost(p_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void Reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    if (p_ != nullptr) cudaFreeHost(p_);
    p_ = nullptr;
    bytes_ = 0;
    CudaCheck(cudaMallocHost(&p_, bytes), "cudaMallocHost");
    bytes_ = bytes;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// The weight on the device as cuBLASLt's A: [m_pad, k_pad] row-major (the artifact's [k, n]
// transposed, zero-padded), with kCudaGuardRows spare zero rows.
class CudaPackedWeight final : public PackedWeight {
 public:
  DeviceBuffer w;
  int64_t m_pad = 0, k_pad = 0;
};

// The kernel chosen for one GEMM shape, with the cuBLASLt descriptors it runs with.
struct GemmPlan {
  bool lt = false;  // cuBLASLt, else dp4a
  Layout a, b, d;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  std::string description;
};

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

std::string AlgoDescription(const cublasLtMatmulAlgo_t& algo) {
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) -> long long {
    uint32_t v = 0;  // every attribute read here is a 32-bit integer
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written) !=
        CUBLAS_STATUS_SUCCESS) {
      return -1;
    }
    return static_cast<long long>(static_cast<int32_t>(v));
  };
  return "cublaslt algo " + std::to_string(get(CUBLASLT_ALGO_CONFIG_ID)) + " tile " +
         std::to_string(get(CUBLASLT_ALGO_CONFIG_TILE_ID)) + " splitk " +
         std::to_string(get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM)) + " reduction " +
         std::to_string(get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME)) + " stages " +
         std::to_string(get(CUBLASLT_ALGO_CONFIG_STAGES_ID)) + " swizzle " +
         std::to_string(get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING));
}

// K/V cache storage the device program writes and a traced forward call reads on the host:
// managed memory, which both reach.
class ManagedKvStorage final : public KvStorage {
 public:
  explicit ManagedKvStorage(size_t bytes) {
    // Never more managed memory than the device has free: past it, managed memory is
    // oversubscribed and pages between host and device (or stalls the GPU) instead of failing.
    if (bytes >= CudaFreeBytes()) throw std::bad_alloc();
    void* p = nullptr;
    if (cudaMallocManaged(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) {
      cudaGetLastError();  // not sticky: the caller reports an allocation failure
      throw std::bad_alloc();
    }
    if (cudaMemset(p, 0, bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
      cudaFree(p);
      throw std::bad_alloc();
    }
    data_ = static_cast<uint8_t*>(p);
    size_ = bytes;
  }
  ~ManagedKvStorage() override { cudaFree(data_); }
};

class CudaBackendImpl final : public Backend, public CudaGemmDevice {
 public:
  explicit CudaBackendImpl(const CudaBackendOptions& options)
      : gemm_(options.gemm),
        resident_(options.resident),
        graphs_(options.graphs),
        step_threads_(options.step_threads) {
    if (const std::string why = SelectCudaDevice(options.device); !why.empty()) {
      throw BackendError("backend 'cuda': " + why);
    }
    device_ = options.device;
    CudaCheck(cudaGetDeviceProperties(&props_, device_), "cudaGetDeviceProperties");
    std::string error;
    stream_ = MakeCudaStream(&error);
    if (!stream_) throw BackendError("cuda backend: " + error);
    cublasLtHandle_t lt = nullptr;
    LtCheck(cublasLtCreate(&lt), "cublasLtCreate");
    lt_.reset(lt);
    cublasLtMatmulDesc_t desc = nullptr;
    LtCheck(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32I, CUDA_R_32I), "matmul desc");
    desc_.reset(desc);
    const cublasOperation_t trans = CUBLAS_OP_T, plain = CUBLAS_OP_N;
    LtCheck(cublasLtMatmulDescSetAttribute(desc_.get(), CUBLASLT_MATMUL_DESC_TRANSA, &trans,
                                           sizeof(trans)),
            "TRANSA");
    LtCheck(cublasLtMatmulDescSetAttribute(desc_.get(), CUBLASLT_MATMUL_DESC_TRANSB, &plain,
                                           sizeof(plain)),
            "TRANSB");
    workspace_ = DeviceBuffer(kWorkspaceBytes);
    CpuBackendOptions host;
    host.threads = options.host_threads;
    host_ = MakeCpuBackend(host);
  }

  ~CudaBackendImpl() override {
    // The stream's queued work finishes before the buffers it uses are freed.
    if (stream_) cudaStreamSynchronize(stream_.get());
  }

  std::string_view Name() const override { return "cuda"; }
  int NumThreads() const override { return host_->NumThreads(); }
  const RowOps& row_ops() const override { return host_->row_ops(); }
  void ParallelFor(int64_t n, RangeFn body) override { host_->ParallelFor(n, body); }
  // The row loops run on the host's threads: one region of them per forward pass. The products
  // run on the device, so there is nothing for idle host threads to read ahead.
  void RunRegion(FunctionRef<void()> fn) override { host_->RunRegion(fn); }
  std::unique_ptr<KvStorage> AllocateKvStorage(size_t bytes) override {
    if (resident_) return std::make_unique<ManagedKvStorage>(bytes);
    return host_->AllocateKvStorage(bytes);
  }

  // The resident program (engine/backends/cuda_forward.h), unless the options turned it off.
  std::unique_ptr<ResidentForward> MakeResidentForward(const ModelWeights& weights) override {
    if (!resident_) return nullptr;
    CudaResidentOptions o;
    o.graphs = graphs_;
    o.step_threads = step_threads_;
    return MakeCudaResidentForward(weights, *this, o);
  }

  // CudaGemmDevice: the same packed weights and kernels as the host-staged products.
  std::unique_ptr<PackedWeight> PackForDevice(const int8_t* w8t, int64_t k, int64_t n) override {
    return PackWeight(w8t, k, n);
  }
  void GemmOnDevice(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c) override {
    if (m <= 0) return;
    Multiply(static_cast<const CudaPackedWeight&>(w), TokensFor(m), a, c);
  }
  int64_t GemmRowsOnDevice(int64_t m) const override { return TokensFor(m) + kCudaGuardRows; }
  CUstream_st* DeviceStream() const override { return stream_.get(); }

  std::vector<std::pair<std::string, std::string>> DeviceFacts() const override {
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    std::vector<std::pair<std::string, std::string>> out = {
        {"name", props_.name},
        {"compute_capability", std::to_string(props_.major) + "." + std::to_string(props_.minor)},
        {"memory_bytes", std::to_string(props_.totalGlobalMem)},
        {"driver", std::to_string(driver)},
        {"runtime", std::to_string(runtime)},
        {"cublaslt", std::to_string(cublasLtGetVersion())},
        {"gemm", CudaGemmName(gemm_)},
        {"forward", resident_ ? "resident" : "host rows"},
        {"cuda_graphs", resident_ && graphs_ ? "on" : "off"},
    };
    if (resident_) out.emplace_back("step_threads", std::to_string(step_threads_));
    std::string algos;
    for (const auto& [shape, plan] : plans_) {
      const auto& [m_pad, tokens, k_pad] = shape;
      algos += (algos.empty() ? "" : "; ") + std::to_string(m_pad) + "x" + std::to_string(tokens) +
               "x" + std::to_string(k_pad) + ": " + plan.description;
    }
    out.emplace_back("gemm_algorithms", algos);
    return out;
  }

  std::unique_ptr<PackedWeight> PackWeight(const int8_t* w8t, int64_t k, int64_t n) override {
    CheckCudaInnerDimension(k, n);
    const CudaGemmShape s = CudaGemmShapeFor(1, n, k);
    std::vector<int8_t> t(static_cast<size_t>((s.m_pad + kCudaGuardRows) * s.k_pad), 0);
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t o = 0; o < n; ++o) t[static_cast<size_t>(o * s.k_pad + i)] = w8t[i * n + o];
    }
    auto w = std::make_unique<CudaPackedWeight>();
    w->k = k;
    w->n = n;
    w->m_pad = s.m_pad;
    w->k_pad = s.k_pad;
    w->w = DeviceBuffer(t.size());
    CudaCheck(cudaMemcpy(w->w.as<void>(), t.data(), t.size(), cudaMemcpyHostToDevice),
              "copying a weight to the device");
    return w;
  }

  void MatmulI8(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c) override {
    const PackedWeight* const ws[] = {&w};
    int32_t* const cs[] = {c};
    MatmulI8Fused(a, m, ws, cs);
  }

  // The activations go to the device once for every weight that shares them; each product
  // comes back into pinned memory; one synchronization per call.
  void MatmulI8Fused(const int8_t* a, int64_t m, std::span<const PackedWeight* const> w,
                     std::span<int32_t* const> c) override {
    if (w.empty() || m <= 0) return;
    const int64_t k = w[0]->k;
    // Columns computed (the first m come back): rounded up only where cuBLASLt may run, whose
    // plans are per shape; the dp4a kernel needs no plan.
    const int64_t tokens = TokensFor(m);
    const CudaGemmShape s0 = CudaGemmShapeFor(m, 1, k);
    const auto a_bytes = static_cast<size_t>(m * s0.k_pad);
    a_host_.Reserve(a_bytes);
    int8_t* staged = a_host_.as<int8_t>();
    for (int64_t t = 0; t < m; ++t) {
      std::memcpy(staged + t * s0.k_pad, a + t * k, static_cast<size_t>(k));
      std::memset(staged + t * s0.k_pad + k, 0, static_cast<size_t>(s0.k_pad - k));
    }
    // Rows m..tokens-1 keep whatever an earlier call left there: they feed only the padded
    // output columns, which are never copied back.
    a_dev_.Reserve(static_cast<size_t>((tokens + kCudaGuardRows) * s0.k_pad));
    CudaCheck(
        cudaMemcpyAsync(a_dev_.as<void>(), staged, a_bytes, cudaMemcpyHostToDevice, stream_.get()),
        "copying activations to the device");
    // Offsets of each product in the device and pinned buffers (members: no allocation per call
    // once they have grown).
    std::vector<size_t>& d_offset = d_offset_;
    std::vector<size_t>& c_offset = c_offset_;
    d_offset.assign(w.size() + 1, 0);
    c_offset.assign(w.size() + 1, 0);
    for (size_t i = 0; i < w.size(); ++i) {
      const auto& pw = static_cast<const CudaPackedWeight&>(*w[i]);
      DV_CHECK(pw.k == k) << "MatmulI8Fused: weights of inner dimensions " << k << " and " << pw.k;
      d_offset[i + 1] = d_offset[i] + static_cast<size_t>((tokens + kCudaGuardRows) * pw.m_pad);
      c_offset[i + 1] = c_offset[i] + static_cast<size_t>(m * pw.n);
    }
    d_dev_.Reserve(d_offset.back() * sizeof(int32_t));
    c_host_.Reserve(c_offset.back() * sizeof(int32_t));
    for (size_t i = 0; i < w.size(); ++i) {
      const auto& pw = static_cast<const CudaPackedWeight&>(*w[i]);
      int32_t* d = d_dev_.as<int32_t>() + d_offset[i];
      Multiply(pw, tokens, a_dev_.as<int8_t>(), d);
      CudaCheck(cudaMemcpy2DAsync(c_host_.as<int32_t>() + c_offset[i],
                                  static_cast<size_t>(pw.n) * sizeof(int32_t), d,
                                  static_cast<size_t>(pw.m_pad) * sizeof(int32_t),
                                  static_cast<size_t>(pw.n) * sizeof(int32_t),
                                  static_cast<size_t>(m), cudaMemcpyDeviceToHost, stream_.get()),
                "copying a product to the host");
    }
    CudaCheck(cudaStreamSynchronize(stream_.get()), "running a GEMM");
    for (size_t i = 0; i < w.size(); ++i) {
      std::memcpy(c[i], c_host_.as<int32_t>() + c_offset[i],
                  (c_offset[i + 1] - c_offset[i]) * sizeof(int32_t));
    }
  }

 private:
  // Columns a GEMM of m tokens computes: rounded up only where cuBLASLt may run, whose plans
  // are per shape; the dp4a kernel needs no plan.
  int64_t TokensFor(int64_t m) const { return gemm_ == CudaGemm::kDp4a ? m : CudaPlanTokens(m); }

  // d[m_pad x tokens] (column-major, ld m_pad) = W^T a (a: tokens rows of k_pad bytes, with
  // guard rows after), enqueued on the stream.
  void Multiply(const CudaPackedWeight& w, int64_t tokens, const int8_t* a, int32_t* d) {
    const GemmPlan& plan = PlanFor(w.m_pad, tokens, w.k_pad);
    if (!plan.lt) {
      CudaCheck(cuda::LaunchGemmDp4a(w.w.as<int8_t>(), a, d, w.m_pad, tokens, w.k_pad, w.m_pad,
                                     stream_.get()),
                "the dp4a GEMM kernel");
      return;
    }
    const int32_t alpha = 1, beta = 0;
    LtCheck(cublasLtMatmul(lt_.get(), desc_.get(), &alpha, w.w.as<void>(), plan.a.get(), a,
                           plan.b.get(), &beta, d, plan.d.get(), d, plan.d.get(), &plan.algo,
                           workspace_.as<void>(), plan.workspace, stream_.get()),
            "matmul");
  }

  // One kernel per (m_pad, tokens, k_pad), chosen once: the heuristic query happens here, on
  // the first GEMM of the shape, never again for it (tokens is CudaPlanTokens' count, so the
  // prompts of a long run add a bounded number of shapes).
  const GemmPlan& PlanFor(int64_t m_pad, int64_t tokens, int64_t k_pad) {
    const auto key = std::make_tuple(m_pad, tokens, k_pad);
    const auto found = plans_.find(key);
    if (found != plans_.end()) return found->second;
    GemmPlan plan;
    const bool want_lt =
        gemm_ == CudaGemm::kCublasLt || (gemm_ == CudaGemm::kAuto && tokens > kCudaDp4aMaxTokens);
    if (want_lt) {
      plan.a = MakeLayout(CUDA_R_8I, k_pad, m_pad, k_pad, "layout A");
      plan.b = MakeLayout(CUDA_R_8I, k_pad, tokens, k_pad, "layout B");
      plan.d = MakeLayout(CUDA_R_32I, m_pad, tokens, m_pad, "layout D");
      cublasLtMatmulPreference_t raw_pref = nullptr;
      LtCheck(cublasLtMatmulPreferenceCreate(&raw_pref), "preference");
      const Preference pref(raw_pref);
      const uint64_t ws = kWorkspaceBytes;
      cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &ws, sizeof(ws));
      cublasLtMatmulHeuristicResult_t result{};
      int returned = 0;
      const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
          lt_.get(), desc_.get(), plan.a.get(), plan.b.get(), plan.d.get(), plan.d.get(),
          pref.get(), 1, &result, &returned);
      if (st == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
        plan.lt = true;
        plan.algo = result.algo;
        plan.workspace = result.workspaceSize;
        plan.description =
            AlgoDescription(result.algo) + " workspace " + std::to_string(result.workspaceSize);
      } else if (gemm_ == CudaGemm::kCublasLt) {
        throw BackendError("backend 'cuda': cuBLASLt offers no int8 algorithm for " +
                           std::to_string(m_pad) + " x " + std::to_string(tokens) + " x " +
                           std::to_string(k_pad) + " (" + cublasLtGetStatusString(st) + ")");
      }
    }
    if (!plan.lt) plan.description = "dp4a";
    return plans_.emplace(key, std::move(plan)).first->second;
  }

  CudaGemm gemm_;
  bool resident_, graphs_;
  int step_threads_;
  int device_ = 0;
  cudaDeviceProp props_{};
  // Before everything below that uses them, so destroyed after it.
  CudaStream stream_;
  LtHandle lt_;
  MatmulDesc desc_;
  DeviceBuffer workspace_;
  std::unique_ptr<CpuBackend> host_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, GemmPlan> plans_;
  PinnedBuffer a_host_, c_host_;
  DeviceBuffer a_dev_, d_dev_;
  std::vector<size_t> d_offset_, c_offset_;
};

}  // namespace

CudaGemm ParseCudaGemm(const std::string& name) {
  if (name == "auto") return CudaGemm::kAuto;
  if (name == "cublaslt") return CudaGemm::kCublasLt;
  if (name == "dp4a") return CudaGemm::kDp4a;
  throw BackendError("unknown cuda GEMM kernel '" + name + "' (auto, cublaslt, dp4a)");
}

const char* CudaGemmName(CudaGemm gemm) {
  switch (gemm) {
    case CudaGemm::kAuto:
      return "auto";
    case CudaGemm::kCublasLt:
      return "cublaslt";
    case CudaGemm::kDp4a:
      return "dp4a";
  }
  return "auto";
}

bool ParseCudaForward(const std::string& name) {
  if (name == "resident") return true;
  if (name == "host-rows") return false;
  throw BackendError("unknown cuda forward pass '" + name + "' (resident, host-rows)");
}

namespace {

[[noreturn]] void RefuseStepThreads(const std::string& text) {
  throw BackendError("cuda step threads '" + text + "': a multiple of 32 from 32 to " +
                     std::to_string(kCudaMaxStepThreads));
}

}  // namespace

bool CudaStepThreadsValid(int threads) {
  return threads >= 32 && threads <= kCudaMaxStepThreads && threads % 32 == 0;
}

int CheckCudaStepThreads(int threads) {
  if (!CudaStepThreadsValid(threads)) RefuseStepThreads(std::to_string(threads));
  return threads;
}

int ParseCudaStepThreads(const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !CudaStepThreadsValid(value)) {
    RefuseStepThreads(text);
  }
  return value;
}

int64_t CudaPlanTokens(int64_t tokens) {
  if (tokens <= 16) return tokens;
  if (tokens <= 256) {
    int64_t p = 32;
    while (p < tokens) p *= 2;
    return p;
  }
  return (tokens + 255) / 256 * 256;
}

CudaGemmShape CudaGemmShapeFor(int64_t tokens, int64_t out, int64_t k) {
  CudaGemmShape s;
  s.out = out;
  s.tokens = tokens;
  s.k = k;
  s.m_pad = (out + 3) / 4 * 4;
  s.k_pad = (k + 3) / 4 * 4;
  s.lda = s.k_pad;
  s.ldb = s.k_pad;
  s.ldd = s.m_pad;
  return s;
}

void CheckCudaInnerDimension(int64_t k, int64_t n) {
  // 2^31 / (127 * 128) = 132104.06: k = 132104 is the largest inner dimension that cannot wrap.
  constexpr int64_t kMaxK = ((int64_t{1} << 31) - 1) / (127 * 128);
  if (k <= 0 || n <= 0 || k > kMaxK) {
    throw BackendError("backend 'cuda': a weight of inner dimension " + std::to_string(k) +
                       " and " + std::to_string(n) +
                       " outputs cannot be multiplied exactly in int32 (needs 0 < k and k * 127 "
                       "* 128 < 2^31, k <= " +
                       std::to_string(kMaxK) + ")");
  }
}

std::unique_ptr<Backend> MakeCudaBackend(const CudaBackendOptions& options) {
  CudaBackendOptions o = options;
  if (o.gemm == CudaGemm::kAuto) {
    if (const char* env = std::getenv("DETVERIFY_CUDA_GEMM"); env != nullptr && *env != '\0') {
      o.gemm = ParseCudaGemm(env);
    }
  }
  if (const char* env = std::getenv("DETVERIFY_CUDA_FORWARD"); env != nullptr && *env != '\0') {
    o.resident = ParseCudaForward(env);
  }
  if (o.step_threads == 0) {
    const char* env = std::getenv("DETVERIFY_CUDA_STEP_THREADS");
    o.step_threads = env != nullptr && *env != '\0' ? ParseCudaStepThreads(env) : kCudaStepThreads;
  } else {
    CheckCudaStepThreads(o.step_threads);
  }
  return std::make_unique<CudaBackendImpl>(o);
}

}  // namespace dv
