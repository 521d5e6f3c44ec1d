// The cuda backend: the int8 forward pass on an NVIDIA GPU, exact.
//
// By default the whole pass runs on the device (engine/backends/cuda_forward.h): the weights,
// the activations and the K/V caches stay there, each step between two GEMMs is a kernel built
// from the operators themselves (engine/backends/device_forward.h, block_row_ops.h), and decode
// calls replay CUDA graphs. `DETVERIFY_CUDA_FORWARD=host-rows` (CudaBackendOptions::resident =
// false) keeps the earlier split instead, described below: GEMMs on the device, row work on the
// host; a traced call always takes that path.
//
// Every linear layer runs on the device as c[tokens, out] = a[tokens, k] * W with int8 operands
// and int32 accumulation, through cuBLASLt (CUBLAS_COMPUTE_32I, scale type CUDA_R_32I, A/B
// CUDA_R_8I, C/D CUDA_R_32I, no epilogue) or, for the shapes cuBLASLt declines and for small
// token counts, a plain dp4a kernel (engine/backends/cuda_gemm_dp4a.cu). Integer accumulation is
// exact in any order as long as no partial sum saturates or wraps: PackWeight refuses an inner
// dimension with k * 127 * 128 >= 2^31, so split-K and any reduction tree give the same int32.
// Requantization never happens on the device's GEMM path (no float-scale int8-output epilogue):
// the row operations between GEMMs run on the host through the cpu backend (its SIMD row
// kernels and thread pool), which gives the reference backend's bits by its own tests.
//
// cuBLASLt's int8 kernels on Hopper take only the regular (non-COL32) orders in "TN" form: the
// weight is A, transposed ([out, k] row-major = column-major k x out), the activations are B
// ([tokens, k] row-major), D is column-major out x tokens = our row-major [tokens, out]; m = out
// and k are padded to multiples of 4 with zeros (which add nothing), leading dimensions likewise,
// and every device operand carries spare zero rows after its end, because those kernels are known
// to read past an operand's last row.
//
// Without a device (no GPU, no driver) MakeCudaBackend throws a BackendError whose one line says
// what the CUDA runtime answered; the registry reports the backend as unavailable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/backends/backend.h"

namespace dv {

// Which kernel multiplies: cuBLASLt, the dp4a kernel, or the per-shape choice (cuBLASLt where its
// heuristic offers an algorithm and the batch has more than kCudaDp4aMaxTokens tokens).
enum class CudaGemm { kAuto, kCublasLt, kDp4a };
inline constexpr int64_t kCudaDp4aMaxTokens = 4;

// "auto", "cublaslt", "dp4a"; BackendError naming the three otherwise.
CudaGemm ParseCudaGemm(const std::string& name);
const char* CudaGemmName(CudaGemm gemm);

struct CudaBackendOptions {
  int device = 0;        // CUDA device ordinal
  int host_threads = 0;  // threads of the host's row work; 0: every CPU this process may run on
  // kAuto unless DETVERIFY_CUDA_GEMM (auto | cublaslt | dp4a) says otherwise.
  CudaGemm gemm = CudaGemm::kAuto;
  // The whole pass on the device (K/V caches in managed memory), unless DETVERIFY_CUDA_FORWARD
  // (resident | host-rows) says otherwise.
  bool resident = true;
  // Decode calls of the resident pass as CUDA graphs, one per batch shape.
  bool graphs = true;
  // Threads of each resident step's block (a multiple of 32 up to kCudaMaxStepThreads); 0:
  // DETVERIFY_CUDA_STEP_THREADS, else kCudaStepThreads. The bits do not depend on it (the block
  // programs are exact at any width); the time of a batch-1 step, a single block per row, does.
  int step_threads = 0;
};

// "resident" -> true, "host-rows" -> false; BackendError naming the two otherwise.
bool ParseCudaForward(const std::string& name);

// A resident step's block width: a multiple of 32 from 32 to kCudaMaxStepThreads.
bool CudaStepThreadsValid(int threads);
// `threads` when valid (CudaBackendOptions::step_threads given explicitly); BackendError naming
// the range otherwise.
int CheckCudaStepThreads(int threads);
// The same from text (DETVERIFY_CUDA_STEP_THREADS); BackendError naming the text and the range
// otherwise.
int ParseCudaStepThreads(const std::string& text);

// The GEMM operands' shapes as the device sees them (column-major, cuBLASLt's names): m = out
// padded to 4, n = tokens, k padded to 4; lda = ldb = k_pad, ldd = m_pad.
struct CudaGemmShape {
  int64_t out = 0, tokens = 0, k = 0;
  int64_t m_pad = 0, k_pad = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
};
CudaGemmShape CudaGemmShapeFor(int64_t tokens, int64_t out, int64_t k);
// Spare zero rows after every device operand (weights, activations, results).
inline constexpr int64_t kCudaGuardRows = 64;

// The token count a GEMM plan (its cuBLASLt layouts and algorithm) is made for: the batch's own
// up to 16 tokens (decode batches: every shape exact), else rounded up to a power of two up to
// 256 and to a multiple of 256 beyond, so that prompts of every length share a bounded set of
// plans (at most 2x the columns, or 255 more). The padded token columns are computed and never
// copied back: an output column depends on its own activation column only.
int64_t CudaPlanTokens(int64_t tokens);

// The saturation bound, checked when a weight is loaded: BackendError unless 0 < k and
// k * 127 * 128 < 2^31 (an int8 x int8 dot product of length k then fits int32 in any order).
void CheckCudaInnerDimension(int64_t k, int64_t n);

// Throws BackendError without a usable device, or when the CUDA runtime or cuBLASLt refuses.
std::unique_ptr<Backend> MakeCudaBackend(const CudaBackendOptions& options = {});

}  // namespace dv
