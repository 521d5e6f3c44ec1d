// Synthetic Llama models in GGUF (general.architecture "llama", BF16 tensors), from the integer
// PRNG of the synthetic Hugging Face checkpoints (checkpoint/hf_synth.h): each tensor holds the
// values HfSynthTensorBf16 draws for its Hugging Face name, stored as llama.cpp's converter
// (convert_hf_to_gguf.py) stores a Llama: GGUF tensor names, ggml's dims order, and the rows of
// q_proj and k_proj permuted within each head to interleaved RoPE pairs (the inverse of what
// gguf/llama_model.h undoes). Same bytes on every platform; no download. The float engine,
// prepare --gguf, compare --gguf and scenarios' `model: { gguf: PATH }` read them as they read a
// downloaded GGUF; there is no tokenizer in them (token ids only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/float_config.h"

namespace dv::gguf {

struct GgufSynthPreset {
  std::string name;
  FloatModelConfig config;  // family llama: no QK-Norm, untied head, no biases
};

// "llama-tiny" (the shapes of the qwen3-tiny presets; theta 1e4, epsilon 1e-5, 512 positions)
// and "smollm2-135m" (SmolLM2-135M's shapes: 30 layers, hidden 576, 9 query / 3 KV heads,
// head_dim 64, intermediate 1536, vocabulary 49152, theta 1e5, epsilon 1e-5, 8192 positions;
// untied, as a random tied head makes greedy decoding echo its input). Throws ArtifactError
// naming the known presets for an unknown name.
const GgufSynthPreset& FindGgufSynthPreset(const std::string& name);
std::vector<std::string> GgufSynthPresetNames();

// Writes the model of (preset, seed) to the file `path` (its folder created if absent), atomically
// (a temporary file renamed into place), streaming tensor by tensor. Metadata:
// general.architecture, general.name
// ("synthetic <preset> seed <N>"), general.file_type (32, BF16), the llama.* hyper-parameters
// (context_length, embedding_length, block_count, feed_forward_length, attention.head_count,
// attention.head_count_kv, attention.key_length, attention.value_length, rope.dimension_count,
// rope.freq_base, attention.layer_norm_rms_epsilon, vocab_size) and
// tokenizer.ggml.bos_token_id / eos_token_id. Throws FileError naming the path.
void WriteSynthGguf(const GgufSynthPreset& preset, uint64_t seed, const std::string& path);

}  // namespace dv::gguf
