#include "checkpoint/float_config.h"

#include <algorithm>
#include <cmath>

namespace dv {

const char* ModelFamilyName(ModelFamily family) {
  return family == ModelFamily::kQwen3 ? "qwen3" : "llama";
}

std::string CheckFloatModelConfig(const FloatModelConfig& c) {
  constexpr int64_t kMaxDim = int64_t{1} << 24;    // per dimension
  constexpr int64_t kMaxElems = int64_t{1} << 31;  // per tensor (BLAS indices are 32-bit)
  const std::pair<const char*, int64_t> dims[] = {{"num_hidden_layers", c.n_layers},
                                                  {"hidden_size", c.hidden},
                                                  {"num_attention_heads", c.n_q_heads},
                                                  {"num_key_value_heads", c.n_kv_heads},
                                                  {"head_dim", c.head_dim},
                                                  {"intermediate_size", c.intermediate},
                                                  {"vocab_size", c.vocab},
                                                  {"max_position_embeddings", c.max_pos}};
  for (const auto& [name, v] : dims) {
    if (v < 1 || v > kMaxDim) {
      return std::string(name) + " " + std::to_string(v) + " is outside [1, 2^24]";
    }
  }
  if (c.n_layers > 4096) return "num_hidden_layers " + std::to_string(c.n_layers) + " exceeds 4096";
  if (c.n_q_heads % c.n_kv_heads != 0) {
    return "num_attention_heads " + std::to_string(c.n_q_heads) +
           " is not a multiple of num_key_value_heads " + std::to_string(c.n_kv_heads);
  }
  if (c.head_dim % 2 != 0) return "head_dim " + std::to_string(c.head_dim) + " is odd (RoPE)";
  const int64_t widest = std::max({c.q_dim(), c.intermediate, c.vocab});
  if (widest * c.hidden >= kMaxElems) return "a weight matrix has 2^31 elements or more";
  if (!(std::isfinite(c.rope_theta) && c.rope_theta > 1.0)) return "rope_theta must be > 1";
  if (!(std::isfinite(c.rms_norm_eps) && c.rms_norm_eps > 0.0 && c.rms_norm_eps < 1.0)) {
    return "rms_norm_eps must be in (0, 1)";
  }
  return {};
}

}  // namespace dv
