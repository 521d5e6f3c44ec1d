#include "tokenizer/word_cache.h"

namespace dv::tok {

bool WordCache::Lookup(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxWordBytes) return false;
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = index_.find(word);
  if (it == index_.end()) return false;
  const auto first = ids_.begin() + static_cast<std::ptrdiff_t>(it->second.offset);
  out.insert(out.end(), first, first + static_cast<std::ptrdiff_t>(it->second.length));
  return true;
}

void WordCache::Insert(std::string_view word, std::span<const int32_t> ids) {
  if (word.size() > kMaxWordBytes) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  if (index_.size() >= kMaxWords) {
    index_.clear();
    ids_.clear();
  }
  const Span span{static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(ids.size())};
  if (index_.try_emplace(std::string(word), span).second) {
    ids_.insert(ids_.end(), ids.begin(), ids.end());
  }
}

}  // namespace dv::tok
