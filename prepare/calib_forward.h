// The calibration forward: the float model run over the calibration sequences, collecting the
// maxima DetLLM's calibrate_kv_ranges collects (prepare/calib_stats.h) -- reproducibly. Every
// value is float64 and every operation is one of + - * / sqrt (correctly rounded on any IEEE
// machine) or a function of prepare/portable_math.h built from them; every sum runs in index
// order (prepare/fixed_order_gemm.h), so the statistics, and with them the artifact, are the same
// bits on every machine, SIMD level and thread count.
//
// What is computed, per sequence (batch 1, positions 0..T-1, no padding), per layer:
//   x^  = h / sqrt(sum(h^2) / H + eps)                 RMSNorm before gamma (sum in channel order)
//   a   = x^ * gamma_in;  q, k, v = a Wq^T, a Wk^T, a Wv^T  (+ biases where the model has them)
//   q, k <- per-head RMSNorm with q_norm / k_norm gammas (QK-Norm models), then RoPE
//           (rotate-half; angle pos * theta^(-2j/d); pmath::CosSin, pmath::Pow)
//   attention per q head on kv head h / group: z = (q . k) * (1 / sqrt(d)), causal softmax with
//           pmath::Exp (e^(z - max) / sum, sums in slot order), o = sum_j p_j v_j
//   h  += o Wo^T;  x2^ = RMSNorm(h);  g, u = (x2^ gamma_post) Wg^T, ... Wu^T
//   y   = g / (1 + e^-g) * u;  h += y Wd^T
// with the maxima recorded where DetLLM's hooks record them (the gamma removal of attn_in_max and
// mlp_in_max as |x^| where |gamma| >= 1e-4, else |x^ gamma| / 1e-4, as DetLLM's degamma divides).
// The LM head is not needed and not run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "checkpoint/float_checkpoint.h"
#include "prepare/calib_stats.h"
#include "prepare/calibration_set.h"
#include "prepare/fixed_order_gemm.h"

namespace dv {

// Progress of a long computation: `done` of `total` units of `phase` are finished.
using ProgressFn = std::function<void(const char* phase, int64_t done, int64_t total)>;

struct CalibForwardOptions {
  int threads = 1;  // >= 1; the result does not depend on it
  // The GEMM kernel's instruction set (prepare/fixed_order_gemm.h); the result does not depend
  // on it. Unset: GemmIsaFromEnvironment().
  std::optional<GemmIsa> isa;
  ProgressFn progress;
};

// Runs the calibration. Token ids must be in range (the calibration loaders check it). Throws
// ArtifactError naming the tensor when a weight is NaN or infinite, and when an activation
// becomes non-finite (a model whose float forward overflows).
CalibStats CollectCalibStats(const FloatCheckpoint& checkpoint, const CalibrationSet& calibration,
                             const CalibForwardOptions& options);

// theta^(-2j/d) for j < d/2, as DetLLM (and transformers) compute it: (-2.0 * j) / d, then pow.
std::vector<double> RopeInverseFrequencies(double theta, int64_t head_dim);

}  // namespace dv
