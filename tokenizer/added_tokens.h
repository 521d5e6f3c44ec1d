#pragma once
// Added tokens (<|im_start|>, <think>, ...): found in the raw text before normalisation and
// pre-tokenisation, leftmost-longest, as Hugging Face's AddedVocabulary does for tokens with
// "normalized": false.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dv::tok {

struct AddedToken {
  std::string content;
  int32_t id;
  bool special;  // dropped by Decode(..., SpecialTokens::kSkip)
};

class AddedTokenMatcher {
 public:
  struct Match {
    size_t pos;  // byte offset in the searched text
    size_t len;
    int32_t id;
  };

  AddedTokenMatcher() = default;
  // Tokens with empty content are ignored; for a repeated content the last id wins.
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  // The leftmost match starting at or after `from`, the longest of those; nullopt if none.
  // O((size - from) * longest token) worst case, O(size - from) when no token's first byte occurs.
  std::optional<Match> FindNext(std::string_view text, size_t from) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // byte -> node index
    int32_t token_id = -1;                                    // -1: no token ends here
  };
  int32_t Child(int32_t node, unsigned char byte) const;

  std::vector<Node> nodes_;  // nodes_[0] is the root
  bool first_byte_[256] = {};
};

}  // namespace dv::tok
