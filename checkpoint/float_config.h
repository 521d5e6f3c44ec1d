// The shape and hyper-parameters of a float decoder-only transformer as the float engine and
// prepare need them, whatever file they came from: Qwen3 (QK-Norm, Hugging Face config.json)
// today; the Llama family (no QK-Norm, untied head, other theta/epsilon, e.g. from GGUF
// metadata) fits the same fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dv {

enum class ModelFamily { kQwen3, kLlama };

const char* ModelFamilyName(ModelFamily family);  // "qwen3", "llama"

// The shape fields have the names and meaning of the integer engine's ModelConfig (max_pos is
// max_position_embeddings), so prepare maps one onto the other field by field.
struct FloatModelConfig {
  ModelFamily family = ModelFamily::kQwen3;
  int64_t n_layers = 0;
  int64_t hidden = 0;        // H
  int64_t n_q_heads = 0;     // Q
  int64_t n_kv_heads = 0;    // KV
  int64_t head_dim = 0;      // d
  int64_t intermediate = 0;  // I
  int64_t vocab = 0;         // V
  int64_t max_pos = 0;       // max_position_embeddings
  double rope_theta = 1e6;   // RoPE base; HF rotate-half layout, no scaling
  double rms_norm_eps = 1e-6;
  bool qk_norm = true;               // per-head RMSNorm of q and k before RoPE (Qwen3)
  bool tie_word_embeddings = false;  // the LM head is the embedding matrix
  bool attention_bias = false;       // q/k/v/o projections carry biases
  bool mlp_bias = false;             // gate/up/down projections carry biases (Llama option)
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // config.json allows one id or a list
  std::string storage_dtype;           // config's torch_dtype/dtype ("bfloat16"), informational

  int64_t group() const { return n_q_heads / n_kv_heads; }
  int64_t q_dim() const { return n_q_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Why the config cannot describe a model the float engine runs (non-positive sizes, heads not
// divisible, odd head_dim, sizes beyond 2^31 elements per tensor, non-finite or non-positive
// theta/epsilon); an empty string when it can.
std::string CheckFloatModelConfig(const FloatModelConfig& config);

}  // namespace dv
