#include "engine/co_prompts.h"

#include <algorithm>

namespace dv {
namespace {

// xorshift64*: tiny, integer-only, fully specified.
uint64_t NextRandom(uint64_t& s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 0x2545F4914F6CDD1Dull;
}

int64_t Draw(uint64_t& s, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  return lo + static_cast<int64_t>(NextRandom(s) % static_cast<uint64_t>(hi - lo + 1));
}

}  // namespace

std::vector<std::vector<int32_t>> MakeCoPrompts(const CoPromptSpec& spec, int64_t vocab) {
  uint64_t state = spec.seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  if (state == 0) state = 1;
  const int64_t hi_id = std::min(spec.max_id, vocab - 1);
  const int64_t lo_id = std::min(spec.min_id, hi_id);
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < spec.count; ++i) {
    const int64_t len = std::max<int64_t>(1, Draw(state, spec.min_len, spec.max_len));
    std::vector<int32_t> p(static_cast<size_t>(len));
    for (auto& id : p) id = static_cast<int32_t>(Draw(state, lo_id, hi_id));
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::vector<int32_t>> ComposeBatch(const std::vector<int32_t>& ours,
                                               std::vector<std::vector<int32_t>> co_prompts,
                                               int64_t position) {
  const auto pos = static_cast<size_t>(
      std::clamp<int64_t>(position, 0, static_cast<int64_t>(co_prompts.size())));
  co_prompts.insert(co_prompts.begin() + static_cast<std::ptrdiff_t>(pos), ours);
  return co_prompts;
}

}  // namespace dv
