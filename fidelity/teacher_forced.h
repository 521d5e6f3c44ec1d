// Teacher-forced runs of the integer and the float model over token sequences (every position's
// logits, the next token always the text's), and the two fidelity measurements built on them:
// CompareTeacherForced (int against float, position by position) and Perplexity (of either
// model over a text, in windows).
//
// Sequences are fed in chunks of `chunk` tokens that continue one KV cache, so memory stays at
// chunk x vocab logits whatever the length. The integer model's logits do not depend on the
// chunking (its rows are exact); the float model's may, in their last bits (the same chunk size
// gives the same numbers).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/model.h"
#include "fidelity/logit_stats.h"
#include "float_engine/float_model.h"

namespace dv {

// `done` of `total` units finished (positions or windows).
using FidelityProgress = std::function<void(int64_t done, int64_t total)>;

inline constexpr int64_t kTeacherForcedChunk = 256;

// Every position of `ids` through the integer model: each(pos, int32 logits [V], scale m, k).
void IntTeacherForced(IntQwen3& model, std::span<const int32_t> ids, int64_t chunk,
                      const std::function<void(int64_t pos, std::span<const int32_t> logits,
                                               int64_t m, int64_t k)>& each);

// Every position of `ids` through the float model: each(pos, logits [V]).
void FloatTeacherForced(
    FloatQwen3& model, std::span<const int32_t> ids, int64_t chunk,
    const std::function<void(int64_t pos, std::span<const float> logits)>& each);

// The float side of a comparison: every position's logits [T * V] of one sequence (the float
// engine, or any other float forward).
using FloatLogitsFn =
    std::function<void(std::span<const int32_t> ids, std::vector<double>& logits)>;
FloatLogitsFn FloatEngineLogits(FloatQwen3& model, int64_t chunk = kTeacherForcedChunk);

// Int against float over every position of every sequence (logit_stats.h defines each number).
CompareSummary CompareTeacherForced(IntQwen3& model, const FloatLogitsFn& float_logits,
                                    const std::vector<std::vector<int32_t>>& sequences,
                                    const FidelityProgress& progress = nullptr,
                                    int64_t chunk = kTeacherForcedChunk);

// Perplexity of `ids` in windows (PerplexityWindows). Throws ExpectedError as it does.
PerplexitySummary IntPerplexity(IntQwen3& model, std::span<const int32_t> ids, int64_t ctx,
                                int64_t stride, const FidelityProgress& progress = nullptr,
                                int64_t chunk = kTeacherForcedChunk);
PerplexitySummary FloatPerplexity(FloatQwen3& model, std::span<const int32_t> ids, int64_t ctx,
                                  int64_t stride, const FidelityProgress& progress = nullptr,
                                  int64_t chunk = kTeacherForcedChunk);

}  // namespace dv
