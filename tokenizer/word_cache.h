#pragma once
// A thread-safe memo of pre-token bytes -> token ids. Encoding is a pure function of the word, so
// the cache changes speed only, never results.
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dv::tok {

class WordCache {
 public:
  // Words longer than this are not cached (rare, and they would crowd out the common ones).
  static constexpr size_t kMaxWordBytes = 64;
  // The cache is emptied when it holds this many words; bounded memory, and emptying is cheap.
  static constexpr size_t kMaxWords = 1 << 18;

  // Appends the cached ids of `word` to `out` and returns true, or returns false.
  bool Lookup(std::string_view word, std::vector<int32_t>& out) const;
  void Insert(std::string_view word, std::span<const int32_t> ids);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Span {
    uint32_t offset;  // into ids_
    uint32_t length;
  };

  mutable std::mutex mutex_;
  std::unordered_map<std::string, Span, Hash, std::equal_to<>> index_;
  std::vector<int32_t> ids_;
};

}  // namespace dv::tok
