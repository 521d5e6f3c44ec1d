#include "engine/generate.h"

#include <stdexcept>

namespace dv {

std::vector<RowResult> GenerateGreedy(IntQwen3& model,
                                      const std::vector<std::vector<int32_t>>& prompts,
                                      const GenerationOptions& options,
                                      const StepCallback& on_step) {
  const ModelConfig& c = model.config();
  if (options.max_new < 1) throw std::invalid_argument("max_new must be at least 1");
  struct RowState {
    std::unique_ptr<KvCache> cache;
    size_t fed = 0;  // prompt tokens fed so far
    HashChain logits_chain, token_chain;
    std::vector<int32_t> logits;
    int32_t next = 0;  // the token to feed in the next decode call
  };
  std::vector<RowState> st(prompts.size());
  std::vector<RowResult> results(prompts.size());
  for (size_t r = 0; r < prompts.size(); ++r) {
    if (prompts[r].empty()) throw std::invalid_argument("a prompt needs at least one token");
    // The last generated token is never fed, so the cache holds prompt + max_new - 1 slots.
    const int64_t capacity = static_cast<int64_t>(prompts[r].size()) + options.max_new - 1;
    if (capacity > c.max_pos) {
      throw std::invalid_argument("prompt + max_new exceeds the model's max_pos (" +
                                  std::to_string(c.max_pos) + ")");
    }
    st[r].cache = std::make_unique<KvCache>(c, capacity);
    st[r].logits.resize(static_cast<size_t>(c.vocab));
    results[r].tokens.reserve(static_cast<size_t>(options.max_new));
  }

  std::vector<ForwardRow> batch;
  std::vector<size_t> batch_rows;
  for (;;) {
    batch.clear();
    batch_rows.clear();
    for (size_t r = 0; r < st.size(); ++r) {
      RowState& s = st[r];
      if (static_cast<int64_t>(results[r].tokens.size()) >= options.max_new) continue;
      ForwardRow fr;
      fr.cache = s.cache.get();
      fr.last_logits = s.logits.data();
      if (s.fed < prompts[r].size()) {
        const size_t remaining = prompts[r].size() - s.fed;
        size_t n = remaining;
        if (options.split > 0) n = s.fed == 0 ? std::min(remaining, static_cast<size_t>(options.split)) : 1;
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
    if (batch.empty()) break;
    model.Forward(batch);
    for (size_t b = 0; b < batch.size(); ++b) {
      const size_t r = batch_rows[b];
      RowState& s = st[r];
      if (s.fed < prompts[r].size()) continue;  // still inside the prompt: no step yet
      const int32_t tok = model.GreedyPick(s.logits.data());
      s.logits_chain.UpdateLogits(s.logits);
      s.token_chain.UpdateToken(tok);
      RowResult& res = results[r];
      res.tokens.push_back(tok);
      res.logits_chain.push_back(s.logits_chain.Hex());
      res.token_chain.push_back(s.token_chain.Hex());
      if (options.keep_logits) res.logits.push_back(s.logits);
      s.next = tok;
      if (on_step) on_step(r, static_cast<int64_t>(res.tokens.size()) - 1, options.max_new);
    }
  }
  return results;
}

}  // namespace dv
