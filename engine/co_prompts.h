// Seeded random co-prompts (junk token ids of varied lengths) that share a batch with the prompt
// under test. Integer PRNG only, so every platform draws the same prompts for the same seed.
#pragma once

#include <cstdint>
#include <vector>

namespace dv {

struct CoPromptSpec {
  uint64_t seed = 1234;
  int64_t count = 7;
  int64_t min_len = 5, max_len = 40;     // inclusive
  int64_t min_id = 100, max_id = 50000;  // inclusive, clamped to the vocabulary
};

// `spec.count` prompts; ids are clamped to [0, vocab - 1].
std::vector<std::vector<int32_t>> MakeCoPrompts(const CoPromptSpec& spec, int64_t vocab);

// Places `ours` at index `position` among the co-prompts (position clamped to the batch).
std::vector<std::vector<int32_t>> ComposeBatch(const std::vector<int32_t>& ours,
                                               std::vector<std::vector<int32_t>> co_prompts,
                                               int64_t position);

}  // namespace dv
