// DetLLM's quantization recipe (its prepare.py after calibration): float checkpoint + calibration
// statistics -> the integer tensors and config of a detllm-v1 artifact (docs/SPEC.md,
// ../shared/detllm/COMPAT.md §1). Given the same statistics it writes DetLLM's tensors and config
// values bit for bit: every step is DetLLM's float64 arithmetic in its order (products, quotients,
// sqrt, round-half-to-even), its floor(log2) and its pow taken correctly rounded
// (prepare/portable_math.h).
//
//   embed.e8/m/k     per row: s = max|E_r| / 127, e8 = round(E / s), k = 15 - floor(log2 s),
//                    m = round(s 2^k) (k - 1 when m reaches 2^16)
//   head.w8t, head.m the LM head (the embedding when tied, else lm_head.weight) with the final
//                    RMSNorm gamma folded into its input columns, transposed [H, V]
//   <linear>.w8t/.m  per output channel s_c = max|W_c| / 127 (>= 1e-12), w8 = round(W / s_c), one
//                    shift per tensor k = 15 - floor(log2 max s) (k - 1 if a mantissa reaches
//                    2^16), m = max(1, round(s_c 2^k)); input gammas and smoothing folded first:
//                    W' = (W * gamma_in) * s
//   as/ms/ds/os_m    analytic smoothing, alpha 0.5: s = sqrt(max(act, 1e-5)) /
//                    sqrt(max(wmax, 1e-5)), divided by its (lower) median, clamped to [1/64, 64];
//                    inv_k = 13 - floor(log2 max(1/s)), inv_m = max(1, round(2^inv_k / s)); the
//                    weights take s_used = 1 / (inv_m 2^-inv_k)
//   q_norm/k_norm.m  round(gamma 2^k) with max |m| in [2^13, 2^14)
//   qs_m, kq_m/k     QK smoothing c = clamp(kmax^a / qmax^(1-a), 1/64, 64), qs = round(c 2^qs_k);
//                    per-head K scale sK = max_j(kmax_j / c_j) * kv_margin / 127, per channel
//                    kq = fit16(c_j sK)
//   ks_m/k, vq_m/k   fit16(sK / sqrt(d)), fit16(vmax * kv_margin / 127)
//   rope.cos/sin     round(cos/sin(pos * theta^(-2j/d)) * 2^14), tiled (rotate-half)
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint/float_checkpoint.h"
#include "engine/safetensors.h"
#include "prepare/calib_forward.h"
#include "prepare/calib_stats.h"

namespace dv {

struct RecipeOptions {
  double kv_margin = 1.05;  // static K/V scale margin over the calibration maxima
  double qk_alpha = 0.3;    // QK smoothing exponent
  bool smooth_acts = true;  // attention/MLP/down input smoothing (DetLLM's smooth_acts)
  bool smooth_o = true;     // o-projection input smoothing
  std::string model_id;
  int64_t calib_samples = 48;  // recorded in config.json only (DetLLM's defaults)
  int64_t calib_len = 1024;
  int threads = 1;  // rows are quantized in parallel; the result does not depend on it
  ProgressFn progress;
};

struct QuantizedModel {
  std::map<std::string, TensorData> tensors;
  nlohmann::ordered_json config;  // DetLLM's keys in DetLLM's order
  // RoPE entries whose rounding would change under a 1-ulp change of theta^(-2j/d) or a 2^-50
  // change of cos/sin (prepare/rope_table.h); 0 means any correct torch build gives the table.
  int64_t rope_sensitive_entries = 0;
};

// Why `config` cannot be prepared into an int artifact (biases, a GEMM inner
// dimension or max_pos beyond DetLLM's overflow asserts); empty when it can.
std::string CheckPreparable(const FloatModelConfig& config);

// Runs the recipe. Throws ArtifactError when CheckPreparable fails or a value makes DetLLM's
// recipe fail (an all-zero gamma, a zero V maximum).
QuantizedModel QuantizeCheckpoint(const FloatCheckpoint& checkpoint, const CalibStats& stats,
                                  const RecipeOptions& options);

// DetLLM's fit_dyadic_float (16 bits): s ~ m / 2^k with m in [2^15, 2^16). s > 0 finite.
struct FloatDyadic {
  int64_t m = 0, k = 0;
};
FloatDyadic FitDyadicFloat(double s);

}  // namespace dv
