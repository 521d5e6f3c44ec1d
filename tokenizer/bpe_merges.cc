#include "tokenizer/bpe_merges.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <queue>
#include <tuple>

namespace dv::tok {
namespace {

constexpr uint64_t kEmptyKey = std::numeric_limits<uint64_t>::max();
constexpr int32_t kNoRank = std::numeric_limits<int32_t>::max();

// Words up to this many symbols use the rescan loop; its memmoves beat a heap for short input.
constexpr size_t kRescanMaxSymbols = 96;

}  // namespace

BpeMerges::BpeMerges(std::span<const MergeRule> rules) {
  // Load factor <= 1/2 keeps probe sequences short.
  const size_t capacity = std::bit_ceil(std::max<size_t>(16, rules.size() * 2));
  keys_.assign(capacity, kEmptyKey);
  merges_.assign(capacity, Merge{kNoRank, -1});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
  for (size_t i = 0; i < rules.size(); ++i) {
    const uint64_t key = Key(rules[i].left, rules[i].right);
    const size_t slot = Slot(key);
    if (keys_[slot] == kEmptyKey) ++size_;
    keys_[slot] = key;
    merges_[slot] = Merge{static_cast<int32_t>(i), rules[i].merged};
  }
}

size_t BpeMerges::Slot(uint64_t key) const {
  // Fibonacci hashing spreads the (left, right) bits; linear probing from there.
  size_t slot = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  while (keys_[slot] != kEmptyKey && keys_[slot] != key) slot = (slot + 1) & mask_;
  return slot;
}

const BpeMerges::Merge* BpeMerges::Find(int32_t left, int32_t right) const {
  if (keys_.empty()) return nullptr;
  const uint64_t key = Key(left, right);
  const size_t slot = Slot(key);
  return keys_[slot] == key ? &merges_[slot] : nullptr;
}

void ApplyMerges(const BpeMerges& merges, std::vector<int32_t>& symbols) {
  if (symbols.size() <= kRescanMaxSymbols) {
    ApplyMergesRescan(merges, symbols);
  } else {
    ApplyMergesHeap(merges, symbols);
  }
}

void ApplyMergesRescan(const BpeMerges& merges, std::vector<int32_t>& symbols) {
  if (symbols.size() < 2) return;
  // pair_rank[i] / pair_merged[i] describe the pair (symbols[i], symbols[i + 1]).
  std::vector<int32_t> pair_rank(symbols.size() - 1);
  std::vector<int32_t> pair_merged(symbols.size() - 1);
  const auto look_up = [&](size_t i) {
    const BpeMerges::Merge* m = merges.Find(symbols[i], symbols[i + 1]);
    pair_rank[i] = m != nullptr ? m->rank : kNoRank;
    pair_merged[i] = m != nullptr ? m->merged : -1;
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) look_up(i);
  while (!pair_rank.empty()) {
    // min_element returns the first minimum: the leftmost pair on ties.
    const auto best = std::min_element(pair_rank.begin(), pair_rank.end());
    if (*best == kNoRank) break;
    const auto i = static_cast<size_t>(best - pair_rank.begin());
    symbols[i] = pair_merged[i];
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    pair_rank.erase(pair_rank.begin() + static_cast<std::ptrdiff_t>(i));
    pair_merged.erase(pair_merged.begin() + static_cast<std::ptrdiff_t>(i));
    if (i > 0) look_up(i - 1);
    if (i + 1 < symbols.size()) look_up(i);
  }
}

void ApplyMergesHeap(const BpeMerges& merges, std::vector<int32_t>& symbols) {
  const size_t n = symbols.size();
  if (n < 2) return;
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<size_t> next(n);
  std::vector<size_t> prev(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : kNone;
    prev[i] = i > 0 ? i - 1 : kNone;
  }
  // (rank, position of the left symbol, left id, right id); the ids detect stale entries. A
  // position only ever grows to the right, so (rank, position) order is (rank, leftmost) order.
  using Entry = std::tuple<int32_t, size_t, int32_t, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  const auto push = [&](size_t i) {
    if (i == kNone || next[i] == kNone) return;
    const BpeMerges::Merge* m = merges.Find(symbols[i], symbols[next[i]]);
    if (m != nullptr) queue.emplace(m->rank, i, symbols[i], symbols[next[i]]);
  };
  for (size_t i = 0; i + 1 < n; ++i) push(i);
  while (!queue.empty()) {
    const auto [rank, i, left, right] = queue.top();
    queue.pop();
    if (!alive[i] || next[i] == kNone || symbols[i] != left || symbols[next[i]] != right) continue;
    const size_t j = next[i];
    symbols[i] = merges.Find(left, right)->merged;
    alive[j] = false;
    next[i] = next[j];
    if (next[j] != kNone) prev[next[j]] = i;
    push(prev[i]);
    push(i);
  }
  size_t out = 0;
  for (size_t i = 0; i != kNone && i < n; i = next[i]) symbols[out++] = symbols[i];
  symbols.resize(out);
}

}  // namespace dv::tok
