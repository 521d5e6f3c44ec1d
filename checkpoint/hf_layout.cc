#include "checkpoint/hf_layout.h"

#include "base/check.h"

namespace dv {

std::vector<HfTensorSpec> HfTensorLayout(const FloatModelConfig& c) {
  const int64_t H = c.hidden, d = c.head_dim, I = c.intermediate, qd = c.q_dim(), kvd = c.kv_dim();
  std::vector<HfTensorSpec> out;
  out.push_back({"model.embed_tokens.weight", {c.vocab, H}, HfTensorRole::kEmbed});
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    auto add = [&](const std::string& name, std::vector<int64_t> shape, HfTensorRole role) {
      out.push_back({p + name, std::move(shape), role, i});
    };
    add("input_layernorm.weight", {H}, HfTensorRole::kInputNorm);
    add("self_attn.q_proj.weight", {qd, H}, HfTensorRole::kQ);
    add("self_attn.k_proj.weight", {kvd, H}, HfTensorRole::kK);
    add("self_attn.v_proj.weight", {kvd, H}, HfTensorRole::kV);
    add("self_attn.o_proj.weight", {H, qd}, HfTensorRole::kO);
    if (c.attention_bias) {
      add("self_attn.q_proj.bias", {qd}, HfTensorRole::kQBias);
      add("self_attn.k_proj.bias", {kvd}, HfTensorRole::kKBias);
      add("self_attn.v_proj.bias", {kvd}, HfTensorRole::kVBias);
      add("self_attn.o_proj.bias", {H}, HfTensorRole::kOBias);
    }
    if (c.qk_norm) {
      add("self_attn.q_norm.weight", {d}, HfTensorRole::kQNorm);
      add("self_attn.k_norm.weight", {d}, HfTensorRole::kKNorm);
    }
    add("post_attention_layernorm.weight", {H}, HfTensorRole::kPostNorm);
    add("mlp.gate_proj.weight", {I, H}, HfTensorRole::kGate);
    add("mlp.up_proj.weight", {I, H}, HfTensorRole::kUp);
    add("mlp.down_proj.weight", {H, I}, HfTensorRole::kDown);
    if (c.mlp_bias) {
      add("mlp.gate_proj.bias", {I}, HfTensorRole::kGateBias);
      add("mlp.up_proj.bias", {I}, HfTensorRole::kUpBias);
      add("mlp.down_proj.bias", {H}, HfTensorRole::kDownBias);
    }
  }
  out.push_back({"model.norm.weight", {H}, HfTensorRole::kFinalNorm});
  if (!c.tie_word_embeddings) out.push_back({kHfLmHeadName, {c.vocab, H}, HfTensorRole::kLmHead});
  return out;
}

FloatTensor& HfTensorSlot(FloatWeights& w, const HfTensorSpec& s) {
  auto engage = [](std::optional<FloatTensor>& o) -> FloatTensor& { return o.emplace(); };
  switch (s.role) {
    case HfTensorRole::kEmbed:
      return w.embed;
    case HfTensorRole::kFinalNorm:
      return w.final_norm;
    case HfTensorRole::kLmHead:
      return w.lm_head;
    default:
      break;
  }
  FloatLayerWeights& l = w.layers.at(static_cast<size_t>(s.layer));
  switch (s.role) {
    case HfTensorRole::kInputNorm:
      return l.input_norm;
    case HfTensorRole::kQ:
      return l.q;
    case HfTensorRole::kK:
      return l.k;
    case HfTensorRole::kV:
      return l.v;
    case HfTensorRole::kO:
      return l.o;
    case HfTensorRole::kQBias:
      return engage(l.q_bias);
    case HfTensorRole::kKBias:
      return engage(l.k_bias);
    case HfTensorRole::kVBias:
      return engage(l.v_bias);
    case HfTensorRole::kOBias:
      return engage(l.o_bias);
    case HfTensorRole::kQNorm:
      return engage(l.q_norm);
    case HfTensorRole::kKNorm:
      return engage(l.k_norm);
    case HfTensorRole::kPostNorm:
      return l.post_norm;
    case HfTensorRole::kGate:
      return l.gate;
    case HfTensorRole::kUp:
      return l.up;
    case HfTensorRole::kDown:
      return l.down;
    case HfTensorRole::kGateBias:
      return engage(l.gate_bias);
    case HfTensorRole::kUpBias:
      return engage(l.up_bias);
    case HfTensorRole::kDownBias:
      return engage(l.down_bias);
    default:
      break;
  }
  DV_CHECK(false) << "HfTensorSlot: unhandled tensor role " << static_cast<int>(s.role);
  __builtin_unreachable();
}

}  // namespace dv
