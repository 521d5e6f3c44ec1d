#pragma once
// A Llama-family model stored in GGUF (general.architecture "llama": Llama 2/3 shapes, SmolLM2,
// TinyLlama...), presented in Hugging Face terms: the config transformers' LlamaConfig would hold,
// read from the `llama.*` metadata, and every tensor under its Hugging Face name
// ("model.layers.3.self_attn.q_proj.weight"), dequantized to float32 in Hugging Face's layout.
//
// Layout: llama.cpp's converter (convert_hf_to_gguf.py, LlamaModel.permute) reorders the rows of
// q_proj and k_proj within each head from the "half split" RoPE pairing Hugging Face uses
// (dims i and i + head_dim/2 rotate together) to interleaved pairs (2i, 2i + 1). Tensor() undoes
// that, so the weights feed a transformers-style forward unchanged:
//   hf_row(h, s, i) = h * head_dim + s * head_dim / 2 + i    (s in {0, 1}, i < head_dim / 2)
//   gguf_row        = h * head_dim + 2 * i + s
// with h over the query heads for q_proj and over the KV heads for k_proj.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"

namespace dv::gguf {

// The model's hyper-parameters, from the file's metadata (key in brackets; defaults as
// llama.cpp's).
struct LlamaConfig {
  std::string name;                  // general.name, may be empty
  int64_t hidden_size = 0;           // llama.embedding_length
  int64_t num_layers = 0;            // llama.block_count
  int64_t num_heads = 0;             // llama.attention.head_count
  int64_t num_kv_heads = 0;          // llama.attention.head_count_kv (default: num_heads)
  int64_t head_dim = 0;              // llama.attention.key_length (default: hidden / heads)
  int64_t intermediate_size = 0;     // llama.feed_forward_length
  int64_t vocab_size = 0;            // rows of token_embd.weight (= llama.vocab_size if present)
  int64_t context_length = 0;        // llama.context_length
  double rope_theta = 10000.0;       // llama.rope.freq_base (a FLOAT32 in the file: 1e5 exactly)
  double rms_norm_eps = 1e-5;        // llama.attention.layer_norm_rms_epsilon, as stored (FLOAT32)
  bool tie_word_embeddings = false;  // no output.weight: the LM head is the embedding
  int64_t bos_token_id = -1;         // tokenizer.ggml.bos_token_id, -1 if absent
  int64_t eos_token_id = -1;         // tokenizer.ggml.eos_token_id, -1 if absent
};

// A dequantized tensor: row-major float32 with its Hugging Face shape.
struct FloatTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

class LlamaModel {
 public:
  // Opens `path` (GgufFile::Open) and validates it as a Llama model: architecture "llama"; every
  // config value present, positive and consistent (heads divisible by KV heads, head_dim even,
  // llama.rope.dimension_count == head_dim); no RoPE scaling, experts or tensors the Llama forward
  // does not use; every tensor present with its expected shape and a type Tensor() can dequantize.
  // Throws GgufError naming the file and the first problem.
  static LlamaModel Open(const std::string& path);
  // Same for an opened file.
  static LlamaModel FromFile(GgufFile file);

  const LlamaConfig& config() const { return config_; }
  const GgufFile& file() const { return file_; }

  // Hugging Face names of the tensors the file holds, in transformers' state_dict order:
  // model.embed_tokens.weight, then per layer q/k/v/o_proj, gate/up/down_proj, input_layernorm,
  // post_attention_layernorm, then model.norm.weight and, when untied, lm_head.weight.
  const std::vector<std::string>& TensorNames() const { return hf_names_; }

  // The tensor named `hf_name` in Hugging Face layout (q_proj and k_proj rows un-permuted), shape
  // as Hugging Face has it ([out, in] for a projection, [hidden] for a norm). Throws GgufError for
  // a name not in TensorNames() (lm_head.weight of a tied model names the embedding in the
  // message).
  FloatTensor Tensor(std::string_view hf_name) const;

  // The GGUF name of a Hugging Face tensor name ("blk.3.attn_q.weight"); empty if not a tensor of
  // this model.
  std::string GgufName(std::string_view hf_name) const;

 private:
  explicit LlamaModel(GgufFile file);
  void ReadConfig();
  void CheckTensors();

  GgufFile file_;
  LlamaConfig config_;
  std::vector<std::string> hf_names_;
};

// Rows of a [rows, cols] row-major matrix from llama.cpp's interleaved RoPE order back to Hugging
// Face's half-split order, per head of `head_dim` rows (see the header comment). rows must be a
// multiple of head_dim and head_dim even.
std::vector<float> UnpermuteRopeRows(const std::vector<float>& data, int64_t rows, int64_t cols,
                                     int64_t head_dim);

// The row of llama.cpp's interleaved RoPE order that holds Hugging Face's row `hf_row` of a
// q_proj / k_proj matrix: within each head of head_dim rows, HF row s * head_dim / 2 + i is GGUF
// row 2i + s. The one index rule behind UnpermuteRopeRows and the GGUF writer's permutation.
int64_t GgufRopeRow(int64_t hf_row, int64_t head_dim);

// The GGUF tensor name of a Hugging Face tensor name of a Llama ("blk.3.attn_q.weight" for
// "model.layers.3.self_attn.q_proj.weight", "output.weight" for "lm_head.weight"); empty for a
// name that is not one. LlamaModel::GgufName adds what only a model knows (layer count, tying).
std::string GgufTensorName(std::string_view hf_name);

}  // namespace dv::gguf
