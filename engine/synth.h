// Synthetic DetLLM-format artifacts from an integer PRNG, written by integer-only code (RoPE
// tables included: CORDIC on 128-bit fixed point), so the bytes -- and every hash computed on
// them -- are identical on every platform and compiler.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/model_weights.h"
#include "engine/safetensors.h"

namespace dv {

struct SynthPreset {
  std::string name;
  ModelConfig config;
};

// Built-in presets: "qwen3-tiny" (fast tests, emulated runs) and "qwen3-0.6b" (Qwen3-0.6B's
// exact shapes). Throws ArtifactError naming the known presets for an unknown name.
const SynthPreset& FindSynthPreset(const std::string& name);
std::vector<std::string> SynthPresetNames();

// The tensors and config.json text of a synthetic artifact.
struct SynthArtifact {
  std::map<std::string, TensorData> tensors;
  std::string config_json;
};
SynthArtifact MakeSynthArtifact(const SynthPreset& preset, uint64_t seed);

// Writes model.safetensors and config.json into `dir` (created if absent). Throws ArtifactError.
void WriteSynthArtifact(const SynthPreset& preset, uint64_t seed, const std::string& dir);

// Q14 RoPE tables [max_pos, d] for theta = 10^6 in HF's rotate-half layout, computed with
// integer arithmetic only: round(cos(pos * theta^(-2j/d)) * 2^14) and likewise sin.
void IntegerRopeTables(int64_t max_pos, int64_t head_dim, std::vector<int64_t>& cos_q14,
                       std::vector<int64_t>& sin_q14);

}  // namespace dv
