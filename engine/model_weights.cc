#include "engine/model_weights.h"

#include <algorithm>

#include "engine/intmath.h"
#include "engine/ops/di_softmax.h"

namespace dv {

void DeriveLayerConstants(const ModelConfig& config, LayerWeights& layer) {
  const int64_t vk_shared = *std::max_element(layer.vq_k.begin(), layer.vq_k.end());
  const int64_t d = config.head_dim;
  layer.attn_out_col_m.assign(static_cast<size_t>(config.n_q_heads * d), 0);
  for (int64_t h = 0; h < config.n_q_heads; ++h) {
    const auto kvh = static_cast<size_t>(h / config.group());
    const int64_t aligned = ShiftLeftWrap(layer.vq_m[kvh], vk_shared - layer.vq_k[kvh]);
    for (int64_t j = 0; j < d; ++j) layer.attn_out_col_m[static_cast<size_t>(h * d + j)] = aligned;
  }
  layer.attn_out_col_k = vk_shared + (kProbBits - 1);
  layer.k_rowk = 20 + layer.k_norm_k;
}

const char* CheckShapeBounds(const ModelConfig& c) {
  // An int32 GEMM accumulator holds K products of magnitude <= 128*127 (int8 x int8, the
  // activation side saturated to +-127 except -128 in weights); K * 127 * 128 < 2^31 keeps
  // every sum exact.
  constexpr int64_t kMaxInner = (int64_t{1} << 31) / (127 * 128);
  if (c.n_layers <= 0 || c.hidden <= 0 || c.n_q_heads <= 0 || c.n_kv_heads <= 0 ||
      c.head_dim <= 0 || c.intermediate <= 0 || c.vocab <= 0 || c.max_pos <= 0) {
    return "every dimension must be positive";
  }
  if (c.n_q_heads % c.n_kv_heads != 0) return "n_q_heads must be a multiple of n_kv_heads";
  if (c.head_dim % 2 != 0) return "head_dim must be even (RoPE pairs)";
  if (c.hidden > kMaxInner) return "hidden too large: hidden*127*128 must stay below 2^31";
  // RMSNorm sums n squares of pre-shifted values below 2^26 (each square < 2^52): n < 2^11.
  if (c.hidden >= 2048) return "hidden must be below 2048 (RMSNorm sum of squares in int64)";
  if (c.head_dim >= 2048) return "head_dim must be below 2048 (QK-Norm sum of squares in int64)";
  if (c.intermediate > kMaxInner) return "intermediate too large for exact int32 accumulation";
  if (c.n_q_heads * c.head_dim > kMaxInner) return "n_q_heads*head_dim too large for int32";
  // P.V context: sum over <= max_pos slots of 2^14 * 128 stays far inside int64.
  if (c.max_pos > (int64_t{1} << 40)) return "max_pos too large";
  return nullptr;
}

}  // namespace dv
