#pragma once
// Qwen2/Qwen3's pre-tokenizer: a Split with the regex below ("Isolated": every match is a piece),
// implemented as a hand-written matcher over code points with the regex's exact backtracking
// semantics (leftmost-first alternation, single-digit \p{N}, the (?!\S) lookahead, (?i) matching
// U+017F LONG S as 's').
#include <string_view>
#include <vector>

namespace dv::tok {

// The pattern as tokenizer.json spells it; a file with any other pattern is rejected at load.
inline constexpr std::string_view kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Appends the pieces of `text` (well-formed UTF-8, already normalised) to `pieces`, in order; the
// pieces are non-empty views into `text` and concatenate to it. O(size).
void SplitPretokens(std::string_view text, std::vector<std::string_view>& pieces);

}  // namespace dv::tok
