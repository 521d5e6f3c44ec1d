// Greedy generation over a batch of independent rows with per-step hash chains.
//
// Each row's prompt is fed in chunks (all at once, or `split` tokens then one by one); step 0 is
// the prompt's last position, and each step's greedy token is fed to produce the next step.
// Rows share forward calls (and so every weight GEMM) but never each other's results.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/expected_error.h"
#include "base/hash_chain.h"
#include "engine/model.h"

namespace dv {

struct GenerationOptions {
  int64_t max_new = 1;       // steps per row (logits rows hashed), >= 1
  int64_t split = 0;         // 0: whole prompt in one call; P > 0: P tokens, then one per call
  bool keep_logits = false;  // keep every step's logits in the result (tests, traces)
};

struct RowResult {
  std::vector<int32_t> tokens;               // [steps]
  std::vector<std::string> logits_chain;     // [steps] 64 hex, chain state after each step
  std::vector<std::string> token_chain;      // [steps]
  std::vector<std::vector<int32_t>> logits;  // [steps][V] when keep_logits
};

// Called after every generated step of every row (row, step, steps), e.g. for progress.
using StepCallback = std::function<void(size_t row, int64_t step, int64_t steps)>;

// Called with every step's logits of every row (row, step, logits [V]), e.g. to dump them.
using LogitsCallback =
    std::function<void(size_t row, int64_t step, std::span<const int32_t> logits)>;

// How many prompt tokens a row feeds in its next forward call, `fed` of them fed already: the
// whole rest, or with split P > 0 first P tokens, then one at a time.
size_t PromptChunk(size_t prompt_size, size_t fed, int64_t split);

// The rows of the next forward call, one schedule for both engines (the integer one here, the
// float one in float_engine/) so that a path makes the same calls in each: every row short of
// max_new steps feeds its next prompt chunk (PromptChunk) or, past its prompt, its last greedy
// pick. `rows[r]` has `cache`, `logits`, `fed` and `next`; ForwardRowT has `cache`,
// `last_logits`, `ids` and `n_tokens`. Fills `batch` and `batch_rows` (the row of each entry)
// and advances each row's `fed`; an empty batch means every row is done.
template <typename ForwardRowT, typename RowStateT>
void ScheduleForwardCall(std::vector<RowStateT>& rows,
                         const std::vector<std::vector<int32_t>>& prompts,
                         const std::vector<RowResult>& results, const GenerationOptions& options,
                         std::vector<ForwardRowT>& batch, std::vector<size_t>& batch_rows) {
  batch.clear();
  batch_rows.clear();
  for (size_t r = 0; r < rows.size(); ++r) {
    RowStateT& s = rows[r];
    if (static_cast<int64_t>(results[r].tokens.size()) >= options.max_new) continue;
    ForwardRowT fr;
    fr.cache = s.cache.get();
    fr.last_logits = s.logits.data();
    if (s.fed < prompts[r].size()) {
      const size_t n = PromptChunk(prompts[r].size(), s.fed, options.split);
      fr.ids = prompts[r].data() + s.fed;
      fr.n_tokens = static_cast<int64_t>(n);
      s.fed += n;
    } else {
      fr.ids = &s.next;
      fr.n_tokens = 1;
    }
    batch.push_back(fr);
    batch_rows.push_back(r);
  }
}

// What a caller asked of generation that the model cannot do: no steps, an empty prompt, a
// prompt plus steps beyond the model's RoPE table. An expected failure (it comes from input).
class GenerationError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

// The checks every engine's generation makes of its input (GenerationError naming the row and
// the limit): max_new >= 1, no empty prompt, every id inside [0, vocab), and each row's cache --
// prompt + max_new - 1 slots, the last generated token is never fed -- within max_pos, which the
// message calls `max_pos_name` (the model's own config key). Returns those capacities.
std::vector<int64_t> CheckPrompts(const std::vector<std::vector<int32_t>>& prompts, int64_t max_new,
                                  int64_t vocab, int64_t max_pos, const std::string& max_pos_name);

// Runs every row to max_new steps. Throws GenerationError on an empty prompt or a
// capacity/position beyond the model's limits.
std::vector<RowResult> GenerateGreedy(IntQwen3& model,
                                      const std::vector<std::vector<int32_t>>& prompts,
                                      const GenerationOptions& options,
                                      const StepCallback& on_step = nullptr,
                                      const LogitsCallback& on_logits = nullptr);

}  // namespace dv
