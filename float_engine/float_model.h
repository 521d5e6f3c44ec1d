// FloatQwen3: the Qwen3 forward pass in float, as a float user runs it on a CPU -- the baseline
// the integer engine is contrasted with. Not reproducible across shapes by design: its GEMMs go
// through OpenBLAS, which chooses kernels, blocking and thread split by shape, so batch
// composition, prefill/decode splits and thread counts may change the logits' bits.
//
// Precision (`FloatDType`):
//   kFp32: activations, accumulation, RMSNorm, RoPE, softmax, SiLU in fp32, as transformers'
//          Qwen3 with torch_dtype=float32 computes them; weights widened exactly to fp32.
//   kBf16: the same ops with every activation rounded to bfloat16 (nearest, ties to even) where a
//          bf16 torch CPU run rounds it: after each linear layer (fp32 accumulation), RMSNorm's
//          normalised value and its gamma product, each RoPE product and sum, SiLU, the gate *
//          up product, each residual add, the attention output and the logits; attention
//          probabilities are rounded to bf16 before P.V as torch's CPU flash attention does.
//          Weights are bf16 (a F32/F16 checkpoint is rounded, as torch_dtype=bfloat16 does).
//   kFp16: the same rounding sites with binary16 (nearest, ties to even; beyond 65504 to
//          infinity, as torch_dtype=float16 gives), the weights rounded to fp16 -- what a float
//          user runs on a GPU, where `linear` (float_engine/float_linear.h) puts the GEMMs on
//          cuBLAS; on the host its GEMMs are sgemm on fp16-valued fp32 operands.
// bf16 GEMMs multiply bf16 weights by fp32 activations (bf16-valued: rounded where torch rounds)
// with fp32 accumulation, as an sbgemm does. The weights stay 16-bit where the small-batch kernel
// runs (x86-64 with AVX2 + FMA: it widens each weight exactly as it streams it, for up to 64
// rows); more rows go to sgemm on blocks of weights widened into fp32 scratch. Without it they
// are held as their fp32 values and go to OpenBLAS as in fp32 mode (the installed OpenBLAS,
// Debian 12's 0.3.21, is built without BUILD_BFLOAT16: cblas_sbgemm is declared, not exported).
//
// Rows are independent: each has its own KV cache; a batch shares the weight GEMMs (all rows'
// tokens stacked), never attention.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/expected_error.h"
#include "base/run_kinds.h"
#include "checkpoint/float_checkpoint.h"
#include "float_engine/float_linear.h"
#include "float_engine/small_gemm.h"

namespace dv {

// An expected failure of the float engine: a precision it does not run, a model shape it cannot
// compute as transformers does. Exit code 2, like every bad input.
class FloatEngineError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

// The precisions of FloatDType (base/run_kinds.h, the spelling every edge uses).
const char* FloatDTypeName(FloatDType dtype);  // "fp32", "bf16", "fp16" (KindName)
// "fp32" | "bf16" | "fp16"; throws FloatEngineError for any other spelling.
FloatDType ParseFloatDType(const std::string& name);

struct FloatEngineOptions {
  FloatDType dtype = FloatDType::kFp32;
  // OpenBLAS threads (process-wide) and the small-batch GEMM's pool; 0: OpenBLAS's default
  // (OPENBLAS_NUM_THREADS, else every CPU) for both.
  int threads = 0;
  // Where the linear layers and the LM head run; null: the host (OpenBLAS and the small-batch
  // GEMM). Attention, norms and the rest stay on the host either way.
  std::shared_ptr<FloatLinearBackend> linear;
};

// One row's keys and values, per layer and KV head: [capacity, head_dim] fp32 (bf16-valued in
// bf16 mode), written once per position.
class FloatKvCache {
 public:
  FloatKvCache(const FloatModelConfig& config, int64_t capacity);
  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }

 private:
  friend class FloatQwen3;
  float* K(int64_t layer, int64_t kv_head) { return k_.data() + Offset(layer, kv_head); }
  float* V(int64_t layer, int64_t kv_head) { return v_.data() + Offset(layer, kv_head); }
  size_t Offset(int64_t layer, int64_t kv_head) const {
    return static_cast<size_t>((layer * n_kv_heads_ + kv_head) * capacity_ * head_dim_);
  }
  int64_t n_kv_heads_ = 0, head_dim_ = 0, capacity_ = 0, length_ = 0;
  std::vector<float> k_, v_;
};

// One row of a forward call: `n_tokens` ids continuing the row's cache.
struct FloatForwardRow {
  FloatKvCache* cache = nullptr;
  const int32_t* ids = nullptr;
  int64_t n_tokens = 0;
  float* last_logits = nullptr;  // [V]: the chunk's last position, or nullptr
  float* all_logits = nullptr;   // [n_tokens, V]: every position (teacher forcing), or nullptr
};

class FloatQwen3 {
 public:
  // Widens (or, in bf16/fp16 mode, rounds) every linear weight of `checkpoint` once into fp32
  // matrices -- bf16 mode: bf16 matrices where the small-batch kernel runs -- in huge-page
  // memory (the one copy, as torch makes when it loads a checkpoint in another dtype), with
  // q/k/v and gate/up stacked so each is one GEMM. The embedding stays in
  // the checkpoint (rows are decoded when looked up), which must outlive the model. Sets the
  // OpenBLAS thread count when options.threads >= 1.
  FloatQwen3(const FloatCheckpoint& checkpoint, const FloatEngineOptions& options);
  ~FloatQwen3();
  FloatQwen3(const FloatQwen3&) = delete;
  FloatQwen3& operator=(const FloatQwen3&) = delete;

  const FloatModelConfig& config() const { return config_; }
  FloatDType dtype() const { return options_.dtype; }
  int64_t weight_bytes() const;  // weight bytes held (read once per decoded token)
  // Whether the linear weights are held as bfloat16 (bf16 mode where the small-batch kernel runs).
  bool bf16_weights() const { return bf16_matrices_; }

  // Runs every row's tokens through the model, appends their keys and values to the rows'
  // caches and writes the requested logits (fp32; bf16 values in bf16 mode). Its preconditions
  // are DV_CHECKs, as IntQwen3::Forward's: token ids inside the vocabulary, rows within their
  // caches' capacity and max_pos (GenerateGreedyFloat refuses such input as a GenerationError).
  void Forward(std::span<FloatForwardRow> rows);

  // Greedy pick: the first index of the largest logit (a NaN counts as largest, as torch.argmax).
  int32_t GreedyPick(const float* logits) const;

 private:
  struct Layer;
  struct Scratch;
  void Embed(int32_t id, float* out) const;
  void RmsNorm(const float* x, const float* gamma, int64_t n, float* out) const;
  void Attend(const FloatForwardRow& row, int64_t layer, const float* qkv, int64_t qkv_stride,
              float* out, int64_t out_stride);
  void AttendDecodeRows(std::span<const FloatForwardRow> rows, std::span<const int64_t> first_token,
                        int64_t layer, const float* qkv, int64_t qkv_stride, float* out,
                        int64_t out_stride);
  void AttendHead(const FloatForwardRow& row, int64_t layer, int64_t h, const float* qkv,
                  int64_t qkv_stride, float* out, int64_t out_stride, float* scores,
                  float* sums) const;
  void RopeTables(std::span<const int64_t> positions);
  float R(float v) const;  // the activation rounding of this dtype (identity for fp32)
  void RoundSpan(float* v, int64_t n) const;
  // y[m, n] = x[m, k] . w[n, k]^T: OpenBLAS for 1 row (sgemv) and for more than
  // kSmallGemmMaxRows rows (sgemm), the small-batch kernel between (float_engine/small_gemm.h).
  // A linear layer's weights [n, k] in the weight memory: fp32 values, or (bf16 mode on a CPU
  // with the small-batch kernel) bfloat16 bit patterns; exactly one is set.
  struct Matrix {
    const float* f32 = nullptr;
    const uint16_t* bf16 = nullptr;
  };
  void Linear(const float* x, int64_t ldx, int64_t m, int64_t k, const Matrix& w, int64_t n,
              float* y, int64_t ldy);
  void LinearBf16(const float* x, int64_t ldx, int64_t m, int64_t k, const uint16_t* w, int64_t n,
                  float* y, int64_t ldy);

  // The fp32 weights: one anonymous mapping, 2 MiB-aligned and advised MADV_HUGEPAGE (a decode
  // step streams all of it; huge pages keep the walk to few TLB entries), handed out in the
  // order a forward pass reads the matrices.
  class WeightMemory {
   public:
    explicit WeightMemory(size_t bytes);
    ~WeightMemory();
    WeightMemory(const WeightMemory&) = delete;
    WeightMemory& operator=(const WeightMemory&) = delete;
    uint8_t* Take(int64_t values, size_t element);  // 64-byte aligned slices
    size_t used() const { return used_; }

   private:
    uint8_t* base_ = nullptr;
    size_t mapped_ = 0, used_ = 0;
  };

  const FloatCheckpoint& checkpoint_;
  FloatModelConfig config_;
  FloatEngineOptions options_;
  std::unique_ptr<WeightMemory> weights_;
  SmallGemmIsa small_gemm_ = SmallGemmIsa::kNone;
  std::unique_ptr<os::ThreadPool> pool_;  // the small-batch GEMM's and decode attention's threads
  std::vector<Layer> layers_;
  const float* final_norm_ = nullptr;
  Matrix head_;                  // [V, H]
  bool bf16_matrices_ = false;   // the linear weights (and head_) held as bfloat16
  std::vector<float> inv_freq_;  // [d/2]
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace dv
