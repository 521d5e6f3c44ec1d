#include "gguf/llama_model.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace dv::gguf {
namespace {

// GGUF tensor name suffix within a block -> Hugging Face suffix within model.layers.N, in
// transformers' state_dict order.
struct LayerTensor {
  const char* gguf;
  const char* hf;
};
constexpr LayerTensor kLayerTensors[] = {
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"attn_norm.weight", "input_layernorm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
};

// Limits that keep every product of config values far inside int64 and reject nonsense early.
constexpr int64_t kMaxWidth = int64_t{1} << 24;  // hidden, intermediate, vocab, context
constexpr int64_t kMaxCount = 4096;              // layers, heads, head_dim

// "model.layers.<N>.<suffix>" with N written canonically (no sign, no leading zero, ≤ 4 digits).
struct HfLayerName {
  int64_t layer;
  std::string_view suffix;
};
std::optional<HfLayerName> SplitHfLayerName(std::string_view hf_name) {
  constexpr std::string_view kPrefix = "model.layers.";
  if (!hf_name.starts_with(kPrefix)) return std::nullopt;
  const std::string_view rest = hf_name.substr(kPrefix.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 4) return std::nullopt;
  int64_t layer = 0;
  for (char ch : rest.substr(0, dot)) {
    if (ch < '0' || ch > '9') return std::nullopt;
    layer = layer * 10 + (ch - '0');
  }
  if (rest.substr(0, dot) != std::to_string(layer)) return std::nullopt;
  return HfLayerName{layer, rest.substr(dot + 1)};
}

}  // namespace

int64_t GgufRopeRow(int64_t hf_row, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  const int64_t head = hf_row / head_dim, r = hf_row % head_dim;
  return head * head_dim + 2 * (r % half) + r / half;
}

std::vector<float> UnpermuteRopeRows(const std::vector<float>& data, int64_t rows, int64_t cols,
                                     int64_t head_dim) {
  std::vector<float> out(data.size());
  const auto row_bytes = static_cast<size_t>(cols) * sizeof(float);
  for (int64_t hf_row = 0; hf_row < rows; ++hf_row) {
    std::memcpy(out.data() + hf_row * cols, data.data() + GgufRopeRow(hf_row, head_dim) * cols,
                row_bytes);
  }
  return out;
}

std::string GgufTensorName(std::string_view hf_name) {
  if (hf_name == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf_name == "model.norm.weight") return "output_norm.weight";
  if (hf_name == "lm_head.weight") return "output.weight";
  const std::optional<HfLayerName> name = SplitHfLayerName(hf_name);
  if (!name) return "";
  for (const LayerTensor& t : kLayerTensors) {
    if (name->suffix == t.hf) return "blk." + std::to_string(name->layer) + "." + t.gguf;
  }
  return "";
}

LlamaModel::LlamaModel(GgufFile file) : file_(std::move(file)) {}

LlamaModel LlamaModel::Open(const std::string& path) { return FromFile(GgufFile::Open(path)); }

LlamaModel LlamaModel::FromFile(GgufFile file) {
  LlamaModel model(std::move(file));
  model.ReadConfig();
  model.CheckTensors();
  return model;
}

void LlamaModel::ReadConfig() {
  const GgufFile& f = file_;
  const std::string_view arch = f.GetStringOr("general.architecture", "");
  if (arch != "llama") {
    f.Fail(arch.empty()
               ? "metadata general.architecture is missing (a Llama model says \"llama\")"
               : "architecture \"" + std::string(arch) + "\" is not supported (only \"llama\")");
  }
  LlamaConfig& c = config_;
  c.name = std::string(f.GetStringOr("general.name", ""));
  const auto bounded = [&](const char* key, int64_t value, int64_t limit) {
    if (value < 1 || value > limit) {
      f.Fail("metadata " + std::string(key) + " = " + std::to_string(value) + " is outside [1, " +
             std::to_string(limit) + "]");
    }
    return value;
  };
  c.hidden_size = bounded("llama.embedding_length", f.GetInt("llama.embedding_length"), kMaxWidth);
  c.num_layers = bounded("llama.block_count", f.GetInt("llama.block_count"), kMaxCount);
  c.num_heads =
      bounded("llama.attention.head_count", f.GetInt("llama.attention.head_count"), kMaxCount);
  c.num_kv_heads = bounded("llama.attention.head_count_kv",
                           f.GetIntOr("llama.attention.head_count_kv", c.num_heads), kMaxCount);
  c.intermediate_size =
      bounded("llama.feed_forward_length", f.GetInt("llama.feed_forward_length"), kMaxWidth);
  c.context_length = bounded("llama.context_length", f.GetInt("llama.context_length"), kMaxWidth);
  if (c.num_heads % c.num_kv_heads != 0) {
    f.Fail("llama.attention.head_count " + std::to_string(c.num_heads) +
           " is not a multiple of head_count_kv " + std::to_string(c.num_kv_heads));
  }
  const int64_t default_head_dim = c.hidden_size / c.num_heads;
  c.head_dim = bounded("llama.attention.key_length",
                       f.GetIntOr("llama.attention.key_length", default_head_dim), kMaxCount);
  const int64_t value_length = f.GetIntOr("llama.attention.value_length", c.head_dim);
  if (value_length != c.head_dim) {
    f.Fail("llama.attention.value_length " + std::to_string(value_length) +
           " differs from key_length " + std::to_string(c.head_dim) + " (not supported)");
  }
  if (c.head_dim % 2 != 0) f.Fail("head_dim " + std::to_string(c.head_dim) + " is odd");
  const int64_t rope_dims = f.GetIntOr("llama.rope.dimension_count", c.head_dim);
  if (rope_dims != c.head_dim) {
    f.Fail("llama.rope.dimension_count " + std::to_string(rope_dims) + " differs from head_dim " +
           std::to_string(c.head_dim) + " (partial RoPE is not supported)");
  }
  const std::string_view scaling = f.GetStringOr("llama.rope.scaling.type", "none");
  if (scaling != "none") {
    f.Fail("RoPE scaling \"" + std::string(scaling) +
           "\" (llama.rope.scaling.type) is not supported");
  }
  const double scaling_factor = f.GetFloatOr("llama.rope.scaling.factor", 0.0);
  if (scaling_factor != 0.0 && scaling_factor != 1.0) {
    f.Fail("llama.rope.scaling.factor " + std::to_string(scaling_factor) + " is not supported");
  }
  if (f.GetIntOr("llama.expert_count", 0) != 0) {
    f.Fail("mixture-of-experts models (llama.expert_count) are not supported");
  }
  c.rope_theta = f.GetFloatOr("llama.rope.freq_base", 10000.0);
  if (!(c.rope_theta > 1.0)) f.Fail("llama.rope.freq_base must be greater than 1");
  c.rms_norm_eps = f.GetFloat("llama.attention.layer_norm_rms_epsilon");
  if (!(c.rms_norm_eps > 0.0 && c.rms_norm_eps < 1.0)) {
    f.Fail("llama.attention.layer_norm_rms_epsilon must be in (0, 1)");
  }
  c.bos_token_id = f.GetIntOr("tokenizer.ggml.bos_token_id", -1);
  c.eos_token_id = f.GetIntOr("tokenizer.ggml.eos_token_id", -1);
}

std::string LlamaModel::GgufName(std::string_view hf_name) const {
  if (hf_name == "lm_head.weight" && config_.tie_word_embeddings) return "";
  const std::optional<HfLayerName> name = SplitHfLayerName(hf_name);
  if (name && name->layer >= config_.num_layers) return "";
  return GgufTensorName(hf_name);
}

void LlamaModel::CheckTensors() {
  const GgufFile& f = file_;
  const LlamaConfig& c = config_;
  const TensorInfo* embed = f.FindTensor("token_embd.weight");
  if (embed == nullptr) f.Fail("tensor token_embd.weight is missing");
  if (embed->dims.size() != 2 || embed->dims[0] != c.hidden_size) {
    f.Fail("tensor token_embd.weight must be [vocab, " + std::to_string(c.hidden_size) + "]");
  }
  config_.vocab_size = embed->dims[1];
  if (c.vocab_size < 1 || c.vocab_size > kMaxWidth)
    f.Fail("token_embd.weight has no valid vocabulary");
  const int64_t declared_vocab = f.GetIntOr("llama.vocab_size", c.vocab_size);
  if (declared_vocab != c.vocab_size) {
    f.Fail("llama.vocab_size " + std::to_string(declared_vocab) + " differs from the " +
           std::to_string(c.vocab_size) + " rows of token_embd.weight");
  }
  if (const Value* tokens = f.Find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->is_array() &&
      tokens->size() != static_cast<uint64_t>(c.vocab_size)) {
    f.Fail("tokenizer.ggml.tokens has " + std::to_string(tokens->size()) + " tokens, the model " +
           std::to_string(c.vocab_size));
  }
  config_.tie_word_embeddings = f.FindTensor("output.weight") == nullptr;

  // Expected shapes, row-major as Hugging Face has them.
  const int64_t q_rows = c.num_heads * c.head_dim;
  const int64_t kv_rows = c.num_kv_heads * c.head_dim;
  std::map<std::string, std::vector<int64_t>> expected;
  hf_names_.clear();
  const auto add = [&](std::string hf, std::vector<int64_t> shape) {
    expected.emplace(GgufName(hf), std::move(shape));
    hf_names_.push_back(std::move(hf));
  };
  add("model.embed_tokens.weight", {c.vocab_size, c.hidden_size});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "self_attn.q_proj.weight", {q_rows, c.hidden_size});
    add(p + "self_attn.k_proj.weight", {kv_rows, c.hidden_size});
    add(p + "self_attn.v_proj.weight", {kv_rows, c.hidden_size});
    add(p + "self_attn.o_proj.weight", {c.hidden_size, q_rows});
    add(p + "mlp.gate_proj.weight", {c.intermediate_size, c.hidden_size});
    add(p + "mlp.up_proj.weight", {c.intermediate_size, c.hidden_size});
    add(p + "mlp.down_proj.weight", {c.hidden_size, c.intermediate_size});
    add(p + "input_layernorm.weight", {c.hidden_size});
    add(p + "post_attention_layernorm.weight", {c.hidden_size});
  }
  add("model.norm.weight", {c.hidden_size});
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, c.hidden_size});

  for (const auto& [name, shape] : expected) {
    const TensorInfo* t = f.FindTensor(name);
    if (t == nullptr) f.Fail("tensor " + name + " is missing");
    if (t->Shape() != shape) {
      std::string want, have;
      for (int64_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      for (int64_t d : t->Shape()) have += (have.empty() ? "" : ", ") + std::to_string(d);
      f.Fail("tensor " + name + " has shape [" + have + "], the config needs [" + want + "]");
    }
    if (!CanDequantize(t->type)) {
      f.Fail("tensor " + name + " has type " + GgmlTypeName(t->type) +
             ", which cannot be dequantized (supported: " + DequantizableTypeNames() + ")");
    }
  }
  for (const TensorInfo& t : f.tensors()) {
    if (expected.count(std::string(t.name)) == 0) {
      const std::string why = t.name == "rope_freqs.weight"
                                  ? " (Llama 3.1 RoPE frequency scaling is not supported)"
                                  : " (not part of the Llama architecture this reader supports)";
      f.Fail("unexpected tensor " + std::string(t.name) + why);
    }
  }
}

FloatTensor LlamaModel::Tensor(std::string_view hf_name) const {
  const std::string gguf_name = GgufName(hf_name);
  const TensorInfo* t = gguf_name.empty() ? nullptr : file_.FindTensor(gguf_name);
  if (t == nullptr) {
    if (hf_name == "lm_head.weight" && config_.tie_word_embeddings) {
      file_.Fail(
          "lm_head.weight is tied to model.embed_tokens.weight (the file has no output.weight)");
    }
    file_.Fail("no tensor " + std::string(hf_name) + " in this Llama model");
  }
  FloatTensor out{t->Shape(), file_.Dequantize(*t)};
  const bool q = hf_name.ends_with("self_attn.q_proj.weight");
  const bool k = hf_name.ends_with("self_attn.k_proj.weight");
  if (q || k) out.data = UnpermuteRopeRows(out.data, out.shape[0], out.shape[1], config_.head_dim);
  return out;
}

}  // namespace dv::gguf
