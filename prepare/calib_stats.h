// The calibration statistics of DetLLM's prepare: per-channel maxima of |activation| at the
// sites the integer engine quantizes, collected over the calibration sequences. Everything the
// quantization recipe takes from the float forward is in here, so prepare from a statistics file
// is exact (prepare/recipe.h) and the float part (prepare/calib_forward.h) can be checked alone.
//
// File form (`--save-calib-stats`, `--calib-stats`): safetensors, float32, DetLLM's names and
// shapes -- the file DetLLM's calibrate_kv_ranges() returns, saved with safetensors.torch:
//   k_chan_max  [L, KV, d]  |K| after k_norm and RoPE
//   q_chan_max  [L, KV, d]  |Q| after q_norm and RoPE, max over each GQA group's q heads
//   v_max       [L, KV]     |V| (v_proj output), max over the head's channels
//   attn_in_max [L, H]      |x / rms(x)| into q/k/v, gamma removed (divided by sign(g) max(|g|,
//   1e-4)) mlp_in_max  [L, H]      the same into gate/up down_in_max [L, I]      |silu(gate) * up|
//   into down_proj o_in_max    [L, Q*d]    |attention output| into o_proj (heads concatenated)
// Files written here also carry `__metadata__` {"calib_samples", "calib_len", "calibration"}.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/float_config.h"

namespace dv {

struct CalibStats {
  int64_t n_layers = 0, hidden = 0, n_q_heads = 0, n_kv_heads = 0, head_dim = 0, intermediate = 0;
  std::vector<float> k_chan_max, q_chan_max, v_max, attn_in_max, mlp_in_max, down_in_max, o_in_max;
  // What produced them (the file's metadata; empty or 0 when unknown).
  int64_t calib_samples = 0, calib_len = 0;
  std::string calibration;

  // Zero-filled statistics for `config`'s shape.
  static CalibStats ZerosFor(const FloatModelConfig& config);
};

// The seven names, in DetLLM's order.
const std::vector<std::string>& CalibStatNames();

// Writes `stats` to `path` atomically (float32, little-endian). Throws ArtifactError.
void SaveCalibStats(const CalibStats& stats, const std::string& path);

// Reads and validates a statistics file against `config`: every name present with dtype F32 and
// the shape above, no other tensor, every value finite and >= 0. Throws ArtifactError
// "<path>: <problem>" naming the tensor.
CalibStats LoadCalibStats(const std::string& path, const FloatModelConfig& config);

}  // namespace dv
