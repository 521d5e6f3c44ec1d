#include "engine/generate.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <span>

namespace dv {
namespace {

struct RowState {
  std::unique_ptr<KvCache> cache;
  size_t fed = 0;  // prompt tokens fed so far
  HashChain logits_chain, token_chain;
  std::span<int32_t> logits;  // the row's piece of the batch's logits block
  int32_t next = 0;           // the token to feed in the next decode call
  // Chain states after each step, kept as digests in the loop (no allocation per step) and
  // written out as hex once generation has ended.
  std::vector<std::array<uint8_t, 32>> logits_states, token_states;
};

// A row's step after its logits are in: the greedy pick and both hash chains. Returns false if
// hashing failed (it runs inside ParallelFor, whose bodies must not throw).
bool FinishStep(const IntQwen3& model, RowState& s) noexcept {
  s.next = model.GreedyPick(s.logits.data());
  try {
    s.logits_chain.UpdateLogits(s.logits);
    s.token_chain.UpdateToken(s.next);
  } catch (...) {
    return false;
  }
  s.logits_states.push_back(s.logits_chain.state());
  s.token_states.push_back(s.token_chain.state());
  return true;
}

}  // namespace

size_t PromptChunk(size_t prompt_size, size_t fed, int64_t split) {
  const size_t remaining = prompt_size - fed;
  if (split <= 0) return remaining;
  return fed == 0 ? std::min(remaining, static_cast<size_t>(split)) : 1;
}

std::vector<int64_t> CheckPrompts(const std::vector<std::vector<int32_t>>& prompts, int64_t max_new,
                                  int64_t vocab, int64_t max_pos, const std::string& max_pos_name) {
  if (max_new < 1) throw GenerationError("max_new must be at least 1");
  std::vector<int64_t> capacities(prompts.size());
  for (size_t r = 0; r < prompts.size(); ++r) {
    if (prompts[r].empty()) throw GenerationError("a prompt needs at least one token");
    for (const int32_t id : prompts[r]) {
      if (id < 0 || id >= vocab) {
        throw GenerationError("token id " + std::to_string(id) + " of prompt row " +
                              std::to_string(r) + " is outside the vocabulary (" +
                              std::to_string(vocab) + ")");
      }
    }
    capacities[r] = static_cast<int64_t>(prompts[r].size()) + max_new - 1;
    if (capacities[r] > max_pos) {
      throw GenerationError("prompt + max_new exceeds the model's " + max_pos_name + " (" +
                            std::to_string(max_pos) + ")");
    }
  }
  return capacities;
}

std::vector<RowResult> GenerateGreedy(IntQwen3& model,
                                      const std::vector<std::vector<int32_t>>& prompts,
                                      const GenerationOptions& options, const StepCallback& on_step,
                                      const LogitsCallback& on_logits) {
  const ModelConfig& c = model.config();
  const std::vector<int64_t> capacities =
      CheckPrompts(prompts, options.max_new, c.vocab, c.max_pos, "max_pos");
  std::vector<RowState> st(prompts.size());
  std::vector<RowResult> results(prompts.size());
  // The rows' logits back to back, in row order: a decode batch's LM head then writes them
  // straight from its one GEMM (IntQwen3::LmHead), with no copy into separate buffers.
  const auto vocab = static_cast<size_t>(c.vocab);
  std::vector<int32_t> logits_block(prompts.size() * vocab);
  for (size_t r = 0; r < prompts.size(); ++r) {
    const int64_t capacity = capacities[r];
    if (capacity > kMaxRowSlots) {
      throw GenerationError(
          "prompt + max_new exceeds 47104 slots, the most a row may hold "
          "(docs/SPEC.md §6.4)");
    }
    st[r].cache = std::make_unique<KvCache>(c, capacity, model.backend());
    st[r].logits = std::span<int32_t>(logits_block).subspan(r * vocab, vocab);
    results[r].tokens.reserve(static_cast<size_t>(options.max_new));
    st[r].logits_states.reserve(static_cast<size_t>(options.max_new));
    st[r].token_states.reserve(static_cast<size_t>(options.max_new));
  }

  std::vector<ForwardRow> batch;
  std::vector<size_t> batch_rows, stepped;
  batch.reserve(st.size());
  batch_rows.reserve(st.size());
  stepped.reserve(st.size());
  for (;;) {
    ScheduleForwardCall(st, prompts, results, options, batch, batch_rows);
    if (batch.empty()) break;
    model.Forward(batch);
    stepped.clear();
    for (size_t r : batch_rows) {
      if (st[r].fed >= prompts[r].size()) stepped.push_back(r);  // else still inside the prompt
    }
    // Each row's pick and hash chains are its own, so the rows of a batch are finished in
    // parallel (SHA-256 of the logits is the largest per-row cost after the forward pass).
    std::atomic<bool> hash_failed{false};
    auto finish = [&](int64_t begin, int64_t end, int) {
      for (int64_t i = begin; i < end; ++i) {
        if (!FinishStep(model, st[stepped[static_cast<size_t>(i)]])) hash_failed = true;
      }
    };
    model.backend().ParallelFor(static_cast<int64_t>(stepped.size()), finish);
    if (hash_failed) throw std::runtime_error("SHA-256 of the step's logits failed");
    for (size_t r : stepped) {
      RowResult& res = results[r];
      res.tokens.push_back(st[r].next);
      if (options.keep_logits) res.logits.emplace_back(st[r].logits.begin(), st[r].logits.end());
      if (on_logits) on_logits(r, static_cast<int64_t>(res.tokens.size()) - 1, st[r].logits);
      if (on_step) on_step(r, static_cast<int64_t>(res.tokens.size()) - 1, options.max_new);
    }
  }
  for (size_t r = 0; r < st.size(); ++r) {
    for (const auto& state : st[r].logits_states) results[r].logits_chain.push_back(HexOf(state));
    for (const auto& state : st[r].token_states) results[r].token_chain.push_back(HexOf(state));
  }
  return results;
}

}  // namespace dv
