#include "tokenizer/added_tokens.h"

namespace dv::tok {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) : nodes_(1) {
  for (const AddedToken& token : tokens) {
    if (token.content.empty()) continue;
    int32_t node = 0;
    for (char c : token.content) {
      const auto byte = static_cast<unsigned char>(c);
      int32_t child = Child(node, byte);
      if (child < 0) {
        child = static_cast<int32_t>(nodes_.size());
        nodes_[static_cast<size_t>(node)].children.emplace_back(byte, child);
        nodes_.emplace_back();
      }
      node = child;
    }
    nodes_[static_cast<size_t>(node)].token_id = token.id;
    first_byte_[static_cast<unsigned char>(token.content[0])] = true;
  }
}

int32_t AddedTokenMatcher::Child(int32_t node, unsigned char byte) const {
  for (const auto& [b, child] : nodes_[static_cast<size_t>(node)].children) {
    if (b == byte) return child;
  }
  return -1;
}

std::optional<AddedTokenMatcher::Match> AddedTokenMatcher::FindNext(std::string_view text,
                                                                    size_t from) const {
  if (nodes_.size() <= 1) return std::nullopt;
  for (size_t start = from; start < text.size(); ++start) {
    if (!first_byte_[static_cast<unsigned char>(text[start])]) continue;
    int32_t node = 0;
    std::optional<Match> longest;
    for (size_t pos = start; pos < text.size(); ++pos) {
      node = Child(node, static_cast<unsigned char>(text[pos]));
      if (node < 0) break;
      const int32_t id = nodes_[static_cast<size_t>(node)].token_id;
      if (id >= 0) longest = Match{start, pos + 1 - start, id};
    }
    if (longest) return longest;
  }
  return std::nullopt;
}

}  // namespace dv::tok
