// The IntQwen3 weights as the runtime sees them: int8 matrices (borrowed, usually from the
// memory-mapped artifact) and integer constants (owned, host byte order). Filled by the artifact
// loader (engine/artifact.h) or by tests; no parsing here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dv {

struct ModelConfig {
  int64_t n_layers = 0;
  int64_t hidden = 0;        // H
  int64_t n_q_heads = 0;     // Q
  int64_t n_kv_heads = 0;    // KV
  int64_t head_dim = 0;      // d
  int64_t intermediate = 0;  // I
  int64_t vocab = 0;         // V
  int64_t max_pos = 0;       // rows of the RoPE tables
  // false: the no-QK-Norm (Llama) variant, spec detllm-v1-llama (docs/SPEC.md §9): Q and K keep
  // their projection's row scale into RoPE and the caches; no q_norm/k_norm tensors.
  bool qk_norm = true;

  int64_t group() const { return n_q_heads / n_kv_heads; }
};

// The spec version whose semantics a model computes: "detllm-v1" (Qwen3, QK-Norm) or
// "detllm-v1-llama" (docs/SPEC.md §9).
const char* SpecVersionOf(const ModelConfig& config);

// A linear layer y = x W with W stored transposed, [in, out] row-major int8, per-output-channel
// mantissas m[out] and one shift k per tensor.
struct LinearWeights {
  const int8_t* w8t = nullptr;  // [in, out]
  int64_t in = 0;
  int64_t out = 0;
  std::vector<int64_t> m;  // [out]
  int64_t k = 0;
};

struct LayerWeights {
  LinearWeights q, k, v, o, gate, up, down;
  std::vector<int64_t> q_norm_m, k_norm_m;  // [d] signed gamma mantissas
  int64_t q_norm_k = 0, k_norm_k = 0;
  std::vector<int64_t> as_m, ms_m;  // [H] input smoothing 1/s
  int64_t as_k = 0, ms_k = 0;
  std::vector<int64_t> ds_m;  // [I]
  int64_t ds_k = 0;
  std::vector<int64_t> os_m;  // [Q*d]
  int64_t os_k = 0;
  std::vector<int64_t> qs_m;  // [KV*d] QK smoothing, Q side
  int64_t qs_k = 0;
  std::vector<int64_t> kq_m, kq_k;  // [KV*d] static K-cache scale per channel
  std::vector<int64_t> ks_m, ks_k;  // [KV] score scale
  std::vector<int64_t> vq_m, vq_k;  // [KV] static V-cache scale per head

  // Derived at load time (SPEC §5.1): o-input column scale and shifts.
  std::vector<int64_t> attn_out_col_m;  // [Q*d]
  int64_t attn_out_col_k = 0;
  int64_t k_rowk = 0;
};

struct ModelWeights {
  ModelConfig config;
  const int8_t* embed_e8 = nullptr;         // [V, H]
  std::vector<int64_t> embed_m, embed_k;    // [V]
  const int8_t* head_w8t = nullptr;         // [H, V]
  std::vector<int64_t> head_m;              // [V]
  int64_t head_k = 0;                       // loaded, unused by the arithmetic
  std::vector<int16_t> rope_cos, rope_sin;  // [max_pos, d] Q14
  std::vector<LayerWeights> layers;
};

// Bounds on what an artifact may say (checked by the loader, engine/artifact.cc). Every shift
// (config.json's *_k values and the shift tensors embed.k, kq_k, ks_k, vq_k) lies in
// [-kMaxArtifactShift, kMaxArtifactShift]: DetLLM derives each from a float scale's exponent
// (k = 15 - floor(log2 s), |k| < 1100 for any double), real artifacts stay within [0, 64], and the
// bound keeps every sum of shifts the forward pass forms (a few per operation, plus the dynamic
// shifts of quantization, which stay within 2^7 of their inputs) far inside int64, where an
// unbounded shift would reach signed-overflow undefined behaviour. Every dimension lies in
// [1, kMaxArtifactDim]; CheckShapeBounds narrows them further.
inline constexpr int64_t kMaxArtifactShift = 4096;
inline constexpr int64_t kMaxArtifactDim = int64_t{1} << 24;

// Fills the derived per-layer constants (attn_out_col_m/k, k_rowk) from the stored ones.
void DeriveLayerConstants(const ModelConfig& config, LayerWeights& layer);

// Checks the overflow bounds the arithmetic relies on for this shape (SPEC §6): every GEMM
// inner dimension K with K*127^2 < 2^31. Returns an empty string when they hold, else why not.
const char* CheckShapeBounds(const ModelConfig& config);

// Checks the value ranges that the overflow analysis relies on (docs/SPEC.md §6.4): every
// mantissa, smoothing multiplier, gamma and RoPE entry inside the range DetLLM's prepare gives
// it, and no K-cache denominator that wraps to 0. With them and CheckShapeBounds, the sites
// §6.4 lists cannot leave int64 for any input. Returns an empty string when they hold, else one
// line naming the tensor, the index and the range.
std::string CheckValueRanges(const ModelWeights& weights);

// The most cache slots a row may reach (docs/SPEC.md §6.4): the softmax sum over S slots of
// DI-Exp values below 2^63 / 47104 stays inside int64 for S <= 47104.
inline constexpr int64_t kMaxRowSlots = 47104;

}  // namespace dv
