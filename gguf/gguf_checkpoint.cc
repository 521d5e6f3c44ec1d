#include "gguf/gguf_checkpoint.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include "base/file_io.h"
#include "checkpoint/float_config.h"

namespace dv::gguf {
namespace {

// A dequantized tensor as the little-endian F32 bytes FloatTensor views (explicitly little-endian,
// so a big-endian host reads the same values).
std::vector<uint8_t> LittleEndianBytes(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  for (size_t i = 0; i < values.size(); ++i) {
    const auto u = std::bit_cast<uint32_t>(values[i]);
    bytes[4 * i] = static_cast<uint8_t>(u);
    bytes[4 * i + 1] = static_cast<uint8_t>(u >> 8);
    bytes[4 * i + 2] = static_cast<uint8_t>(u >> 16);
    bytes[4 * i + 3] = static_cast<uint8_t>(u >> 24);
  }
  return bytes;
}

}  // namespace

FloatModelConfig FloatConfigOf(const LlamaConfig& config) {
  FloatModelConfig c;
  c.family = ModelFamily::kLlama;
  c.n_layers = config.num_layers;
  c.hidden = config.hidden_size;
  c.n_q_heads = config.num_heads;
  c.n_kv_heads = config.num_kv_heads;
  c.head_dim = config.head_dim;
  c.intermediate = config.intermediate_size;
  c.vocab = config.vocab_size;
  c.max_pos = config.context_length;
  c.rope_theta = config.rope_theta;
  c.rms_norm_eps = config.rms_norm_eps;
  c.qk_norm = false;
  c.tie_word_embeddings = config.tie_word_embeddings;
  if (config.bos_token_id >= 0) c.bos_token_id = config.bos_token_id;
  if (config.eos_token_id >= 0) c.eos_token_ids = {config.eos_token_id};
  c.storage_dtype = "gguf";
  return c;
}

std::unique_ptr<FloatCheckpoint> OpenGgufCheckpoint(const std::string& path,
                                                    const std::function<void()>& on_dequantize) {
  const LlamaModel model = LlamaModel::Open(path);
  FloatWeights w;
  w.config = FloatConfigOf(model.config());
  if (const std::string why = CheckFloatModelConfig(w.config); !why.empty()) {
    throw GgufError(path + ": the float engine cannot run this model: " + why);
  }
  if (on_dequantize) on_dequantize();
  std::vector<std::vector<uint8_t>> owned;
  owned.reserve(model.TensorNames().size());
  // Each tensor dequantized into a buffer of its own; the views stay valid when `owned` moves
  // into the checkpoint (a moved vector keeps its buffer).
  auto tensor = [&](const std::string& name) {
    const gguf::FloatTensor t = model.Tensor(name);
    owned.push_back(LittleEndianBytes(t.data));
    dv::FloatTensor view;
    view.name = name;
    view.file = path;
    view.dtype = DType::kF32;
    view.shape = t.shape;
    view.bytes = {owned.back().data(), owned.back().size()};
    return view;
  };
  w.embed = tensor("model.embed_tokens.weight");
  w.layers.resize(static_cast<size_t>(w.config.n_layers));
  for (int64_t i = 0; i < w.config.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    FloatLayerWeights& l = w.layers[static_cast<size_t>(i)];
    l.q = tensor(p + "self_attn.q_proj.weight");
    l.k = tensor(p + "self_attn.k_proj.weight");
    l.v = tensor(p + "self_attn.v_proj.weight");
    l.o = tensor(p + "self_attn.o_proj.weight");
    l.gate = tensor(p + "mlp.gate_proj.weight");
    l.up = tensor(p + "mlp.up_proj.weight");
    l.down = tensor(p + "mlp.down_proj.weight");
    l.input_norm = tensor(p + "input_layernorm.weight");
    l.post_norm = tensor(p + "post_attention_layernorm.weight");
  }
  w.final_norm = tensor("model.norm.weight");
  w.lm_head = w.config.tie_word_embeddings ? w.embed : tensor("lm_head.weight");
  return std::make_unique<FloatCheckpoint>(path, std::move(w), std::vector<MappedFile>{},
                                           std::move(owned), std::vector<std::string>{path});
}

bool IsGgufFile(const std::string& path) {
  // Only a regular file is looked into: opening a FIFO to read its magic would wait for a writer
  // (the reader the caller then picks refuses it, naming the file).
  if (!NonRegularKind(path).empty()) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace dv::gguf
