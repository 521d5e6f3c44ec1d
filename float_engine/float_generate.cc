#include "float_engine/float_generate.h"

#include <algorithm>
#include <bit>

namespace dv {

void UpdateFloatLogits(HashChain& chain, std::span<const float> logits) {
  if constexpr (std::endian::native == std::endian::little) {
    chain.Update({reinterpret_cast<const uint8_t*>(logits.data()), logits.size_bytes()});
  } else {
    std::vector<uint8_t> bytes(logits.size() * 4);
    for (size_t i = 0; i < logits.size(); ++i) {
      const auto v = std::bit_cast<uint32_t>(logits[i]);
      for (size_t b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<uint8_t>(v >> (8 * b));
    }
    chain.Update(bytes);
  }
}

std::vector<RowResult> GenerateGreedyFloat(FloatQwen3& model,
                                           const std::vector<std::vector<int32_t>>& prompts,
                                           const GenerationOptions& options,
                                           const StepCallback& on_step,
                                           const FloatLogitsCallback& on_logits) {
  const FloatModelConfig& c = model.config();
  struct Row {
    std::unique_ptr<FloatKvCache> cache;
    size_t fed = 0;
    HashChain logits_chain, token_chain;
    std::vector<float> logits;
    int32_t next = 0;
  };
  const std::vector<int64_t> capacities =
      CheckPrompts(prompts, options.max_new, c.vocab, c.max_pos, "max_position_embeddings");
  std::vector<Row> st(prompts.size());
  std::vector<RowResult> results(prompts.size());
  for (size_t r = 0; r < prompts.size(); ++r) {
    const int64_t capacity = capacities[r];
    st[r].cache = std::make_unique<FloatKvCache>(c, capacity);
    st[r].logits.resize(static_cast<size_t>(c.vocab));
  }
  std::vector<FloatForwardRow> batch;
  std::vector<size_t> batch_rows;
  for (;;) {
    ScheduleForwardCall(st, prompts, results, options, batch, batch_rows);
    if (batch.empty()) break;
    model.Forward(batch);
    for (size_t r : batch_rows) {
      Row& s = st[r];
      if (s.fed < prompts[r].size()) continue;  // still inside the prompt
      s.next = model.GreedyPick(s.logits.data());
      UpdateFloatLogits(s.logits_chain, s.logits);
      s.token_chain.UpdateToken(s.next);
      RowResult& res = results[r];
      const auto step = static_cast<int64_t>(res.tokens.size());
      res.tokens.push_back(s.next);
      res.logits_chain.push_back(s.logits_chain.Hex());
      res.token_chain.push_back(s.token_chain.Hex());
      if (on_logits) on_logits(r, step, s.logits);
      if (on_step) on_step(r, step, options.max_new);
    }
  }
  return results;
}

}  // namespace dv
