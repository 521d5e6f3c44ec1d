// Synthetic Hugging Face Qwen3 checkpoints (BF16 model.safetensors + config.json, the names,
// dtypes and config keys transformers writes) from the integer PRNG of engine/prng.h. Every
// bfloat16 bit pattern is made by integer code, so the bytes are identical on every platform.
//
// Structure like a trained model's where it matters for quantization: RMSNorm gammas around 1
// with a few channels scaled x10-x30 (the same channels in every layer, as real models' massive-
// activation dimensions), and a few input columns of o_proj and down_proj scaled x10-x30.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/float_checkpoint.h"
#include "checkpoint/float_config.h"
#include "checkpoint/hf_layout.h"

namespace dv {

struct HfSynthPreset {
  std::string name;
  FloatModelConfig config;
};

// "qwen3-tiny" and "qwen3-0.6b" (the shapes of the int presets of the same names; 0.6b is
// Qwen3-0.6B's), and "qwen3-tiny-hd128" (tiny, with Qwen3-0.6B's head_dim 128). All untied (a
// random tied head makes greedy decoding echo its input), theta 1e6, epsilon 1e-6. Throws
// std::invalid_argument naming the known presets for an unknown name.
const HfSynthPreset& FindHfSynthPreset(const std::string& name);
std::vector<std::string> HfSynthPresetNames();

// Writes config.json and model.safetensors into `dir` (created if absent), each atomically;
// streams tensor by tensor, so memory stays near the largest tensor. Throws ArtifactError.
void WriteHfSynthCheckpoint(const HfSynthPreset& preset, uint64_t seed, const std::string& dir);

// The config of a synthetic Qwen3 of these shapes: theta 1e6, epsilon 1e-6, QK-Norm, untied,
// BF16 storage, BOS vocab - 2 and EOS vocab - 1.
FloatModelConfig Qwen3Shape(int64_t layers, int64_t hidden, int64_t q_heads, int64_t kv_heads,
                            int64_t head_dim, int64_t intermediate, int64_t vocab, int64_t max_pos);

// The bytes WriteHfSynthCheckpoint writes for tensor `spec` of HfTensorLayout(config): bfloat16
// little-endian, row-major in Hugging Face's layout. Other writers (the GGUF synthesizer) draw
// the same values through it.
std::vector<uint8_t> HfSynthTensorBf16(const FloatModelConfig& config, uint64_t seed,
                                       const HfTensorSpec& spec);

// The bfloat16 nearest to v * 2^-shift (ties to even), by integer arithmetic only.
uint16_t Bf16FromScaledInt(int64_t v, int shift);

// $DETVERIFY_CACHE (or the XDG / home cache) + /synthetic-hf/<preset>-seed<N>.
std::string HfSyntheticCacheDir(const std::string& preset, uint64_t seed);

// The SHA-256s of a synthetic checkpoint's two files (64 lowercase hex each).
struct HfSynthDigests {
  std::string model_sha256, config_sha256;
};

// What the generator is pinned to: seed 0 of every preset (tests/checkpoint/hf_synth_test.cc
// regenerates them); nullopt for other seeds.
std::optional<HfSynthDigests> PinnedHfSynthDigests(const std::string& preset, uint64_t seed);

// Why the cached folder `dir` of (preset, seed) cannot be used as it is, or "" when it can: its
// files are absent ("absent"), or their SHA-256s are not the pinned ones -- for seeds without a
// pin, not those of the `sha256sums` file written beside them when they were synthesized. Reads
// every byte of the folder's files.
std::string HfSynthCacheProblem(const std::string& preset, uint64_t seed, const std::string& dir);

// Told before a (slow) synthesis into `dir` starts, with why: "absent" for a first use, else
// what HfSynthCacheProblem found.
using HfSynthesisNotice = void (*)(const std::string& dir, const std::string& why);
// The notice every verb prints on stderr: "detverify: synthesizing the float checkpoint into DIR
// (once)", or, for a cache that failed its check, what failed and that it is written again.
void PrintHfSynthesisNotice(const std::string& dir, const std::string& why);

// Opens the synthetic checkpoint from the cache after checking its SHA-256s
// (HfSynthCacheProblem), writing it there first when absent or failing that check, with a
// `sha256sums` file (sha256sum's format) beside it. Throws ArtifactError when freshly written
// files miss their pin (a generator that no longer makes the pinned bytes).
std::unique_ptr<FloatCheckpoint> OpenHfSynthetic(const std::string& preset, uint64_t seed,
                                                 HfSynthesisNotice on_synthesis = nullptr);

}  // namespace dv
