// The weights of a float checkpoint as views of tensors in their storage dtype (BF16, F16 or
// F32, little-endian, row-major), borrowed from the memory-mapped files (or from buffers a
// reader filled, e.g. a dequantized GGUF) that a FloatCheckpoint owns. Linear weights keep
// nn.Linear's layout: [out, in].
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/float_config.h"
#include "engine/safetensors.h"

namespace dv {

struct FloatTensor {
  std::string name;             // as stored (e.g. "model.layers.0.self_attn.q_proj.weight")
  std::string file;             // where it is stored, for errors
  DType dtype = DType::kOther;  // kBF16, kF16 or kF32
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;  // numel() * DTypeSize(dtype) bytes

  int64_t numel() const;
};

// Elements [first, first + out.size()) of `t` widened exactly to float / double.
void DecodeFloat32(const FloatTensor& t, int64_t first, std::span<float> out);
void DecodeFloat64(const FloatTensor& t, int64_t first, std::span<double> out);
// The index of the first NaN or infinity in `t`, if any (for consumers that must refuse such
// weights, e.g. prepare; reading a checkpoint does not scan its values).
std::optional<int64_t> FirstNonFinite(const FloatTensor& t);
// The whole tensor, widened exactly.
std::vector<float> ReadFloat32(const FloatTensor& t);
std::vector<double> ReadFloat64(const FloatTensor& t);

struct FloatLayerWeights {
  FloatTensor input_norm;                     // [H] RMSNorm gamma before attention
  FloatTensor q, k, v;                        // [Q*d, H], [KV*d, H], [KV*d, H]
  FloatTensor o;                              // [H, Q*d]
  std::optional<FloatTensor> q_norm, k_norm;  // [d] per-head RMSNorm gammas (QK-Norm models)
  std::optional<FloatTensor> q_bias, k_bias, v_bias, o_bias;  // attention_bias models
  FloatTensor post_norm;                                      // [H] RMSNorm gamma before the MLP
  FloatTensor gate, up;                                       // [I, H]
  FloatTensor down;                                           // [H, I]
  std::optional<FloatTensor> gate_bias, up_bias, down_bias;   // mlp_bias models
};

struct FloatWeights {
  FloatModelConfig config;
  FloatTensor embed;       // [V, H]
  FloatTensor final_norm;  // [H]
  FloatTensor lm_head;     // [V, H]; a copy of `embed`'s view when tie_word_embeddings
  std::vector<FloatLayerWeights> layers;
};

}  // namespace dv
