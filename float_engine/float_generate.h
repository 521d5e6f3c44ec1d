// Greedy generation with the float engine, in the same form as the integer engine's
// (engine/generate.h): rows in one batch, whole or split prefill, step 0 at the prompt's last
// position, and the same hash chains -- the logits chain over each step's float32 logits as
// little-endian bytes, the token chain over the 8-byte little-endian ids.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/hash_chain.h"
#include "engine/generate.h"
#include "float_engine/float_model.h"

namespace dv {

// Called with every step's logits of every row (row, step, logits [V]), e.g. to dump them.
using FloatLogitsCallback =
    std::function<void(size_t row, int64_t step, std::span<const float> logits)>;

// Runs every row to options.max_new steps (options.keep_logits is not used: take the logits
// through `on_logits`). RowResult::logits stays empty. Throws GenerationError (engine/generate.h)
// on no steps, an empty prompt, a token id outside the vocabulary or a prompt plus steps beyond
// the model's max_position_embeddings.
std::vector<RowResult> GenerateGreedyFloat(FloatQwen3& model,
                                           const std::vector<std::vector<int32_t>>& prompts,
                                           const GenerationOptions& options,
                                           const StepCallback& on_step = nullptr,
                                           const FloatLogitsCallback& on_logits = nullptr);

// chain <- SHA-256(chain || the logits as little-endian float32 bytes), whatever the host.
void UpdateFloatLogits(HashChain& chain, std::span<const float> logits);

}  // namespace dv
