#include "engine/model_weights.h"

#include <algorithm>

#include "engine/intmath.h"
#include "engine/ops/di_softmax.h"

namespace dv {

const char* SpecVersionOf(const ModelConfig& config) {
  return config.qk_norm ? "detllm-v1" : "detllm-v1-llama";
}

void DeriveLayerConstants(const ModelConfig& config, LayerWeights& layer) {
  const int64_t vk_shared = *std::max_element(layer.vq_k.begin(), layer.vq_k.end());
  const int64_t d = config.head_dim;
  layer.attn_out_col_m.assign(static_cast<size_t>(config.n_q_heads * d), 0);
  for (int64_t h = 0; h < config.n_q_heads; ++h) {
    const auto kvh = static_cast<size_t>(h / config.group());
    const int64_t aligned = ShiftLeftWrap(layer.vq_m[kvh], WrapSub(vk_shared, layer.vq_k[kvh]));
    for (int64_t j = 0; j < d; ++j) layer.attn_out_col_m[static_cast<size_t>(h * d + j)] = aligned;
  }
  layer.attn_out_col_k = WrapAdd(vk_shared, kProbBits - 1);
  layer.k_rowk = WrapAdd(20, layer.k_norm_k);
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

namespace {

// The first entry of v outside [lo, hi] (signed: |v| outside), as one line; empty if none.
template <typename T>
std::string OutOfRange(const std::string& name, const std::vector<T>& v, int64_t lo, int64_t hi,
                       const char* range, const char* why) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < lo || v[i] > hi) {
      return "tensor '" + name + "'[" + std::to_string(i) + "] = " + std::to_string(v[i]) +
             " is outside " + range + " (" + why + "; docs/SPEC.md §6.4)";
    }
  }
  return {};
}

}  // namespace

std::string CheckValueRanges(const ModelWeights& w) {
  constexpr int64_t kMant = (int64_t{1} << 16) - 1, kMult = int64_t{1} << 14;
  std::string why;
  auto check = [&](const std::string& name, const auto& v, int64_t lo, int64_t hi,
                   const char* range, const char* use) {
    if (why.empty()) why = OutOfRange(name, v, lo, hi, range, use);
  };
  check("embed.m", w.embed_m, 1, kMant, "[1, 2^16)", "bounds the embedding delta");
  check("head.m", w.head_m, 1, kMant, "[1, 2^16)", "bounds the greedy products");
  check("rope.cos", w.rope_cos, -kMult, kMult, "[-2^14, 2^14]", "bounds the RoPE products");
  check("rope.sin", w.rope_sin, -kMult, kMult, "[-2^14, 2^14]", "bounds the RoPE products");
  for (size_t i = 0; i < w.layers.size() && why.empty(); ++i) {
    const LayerWeights& l = w.layers[i];
    const std::string p = "layers." + std::to_string(i) + ".";
    const std::pair<const char*, const LinearWeights*> linears[] = {
        {"q", &l.q},       {"k", &l.k},   {"v", &l.v},      {"o", &l.o},
        {"gate", &l.gate}, {"up", &l.up}, {"down", &l.down}};
    for (const auto& [name, lw] : linears) {
      check(p + name + ".m", lw->m, 1, kMant, "[1, 2^16)", "bounds the requantization products");
    }
    const std::pair<const char*, const std::vector<int64_t>*> multipliers[] = {{"as_m", &l.as_m},
                                                                               {"ms_m", &l.ms_m},
                                                                               {"ds_m", &l.ds_m},
                                                                               {"os_m", &l.os_m},
                                                                               {"qs_m", &l.qs_m}};
    for (const auto& [name, v] : multipliers) {
      check(p + name, *v, 1, kMult, "[1, 2^14]", "bounds the smoothing products");
    }
    if (w.config.qk_norm) {
      check(p + "q_norm.m", l.q_norm_m, 1 - kMult, kMult - 1, "(-2^14, 2^14)",
            "bounds the QK-Norm gamma products");
      check(p + "k_norm.m", l.k_norm_m, 1 - kMult, kMult - 1, "(-2^14, 2^14)",
            "bounds the QK-Norm gamma products");
    }
    check(p + "kq_m", l.kq_m, 1, kMant, "[1, 2^16)", "bounds the K-cache denominator");
    check(p + "ks_m", l.ks_m, 1, kMant, "[1, 2^16)", "bounds the score scale qm * ks_m");
    check(p + "vq_m", l.vq_m, 1, kMant, "[1, 2^16)", "bounds the V-cache denominator");
    // The K-cache entry divides by kq_m << (k_rowk - kq_k) (A11); a shift that wraps it to 0
    // would divide by zero for every token, which DetLLM cannot run either. (In the Llama
    // variant the shift is the token's own, like V's, and such rows are counted at run time.)
    for (size_t j = 0; j < l.kq_m.size() && why.empty() && w.config.qk_norm; ++j) {
      if (ShiftLeftWrap(l.kq_m[j], Max(WrapSub(l.k_rowk, l.kq_k[j]), 0)) == 0) {
        why = "tensor '" + p + "kq_k'[" + std::to_string(j) + "] = " + std::to_string(l.kq_k[j]) +
              ": the K-cache denominator kq_m << (k_rowk - kq_k) wraps to 0 (k_rowk " +
              std::to_string(l.k_rowk) + "; docs/SPEC.md §6.4)";
      }
    }
  }
  return why;
}

}  // namespace dv
