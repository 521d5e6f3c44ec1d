#pragma once
// The pre-tokenizers of byte-level BPE models, each a hand-written matcher over code points with
// its regex's exact backtracking semantics (leftmost-first alternation, the (?!\S) lookahead):
//   kQwen2       Qwen2/Qwen3: Split(kQwen2SplitPattern, "Isolated") then ByteLevel without regex.
//                Single-digit \p{N}, (?i) contractions (U+017F LONG S matches 's').
//   kGpt2        GPT-2: ByteLevel(use_regex=true), i.e. a split by kGpt2SplitPattern.
//   kDigitsGpt2  StarCoder, SmolLM and SmolLM2: Digits(individual_digits=true) then
//                ByteLevel(use_regex=true): every number code point (General_Category N, what
//                Rust's char::is_numeric tests) is a piece of its own, and kGpt2SplitPattern
//                splits each stretch between them separately.
#include <string_view>
#include <vector>

namespace dv::tok {

// The pattern as tokenizer.json spells it; a file with any other pattern is rejected at load.
inline constexpr std::string_view kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-2's pattern, the one Hugging Face's ByteLevel pre-tokenizer uses with use_regex=true.
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class PreTokenizer { kQwen2, kGpt2, kDigitsGpt2 };

// "qwen2", "gpt2", "digits+gpt2".
const char* PreTokenizerName(PreTokenizer kind);

// Appends the pieces of `text` (well-formed UTF-8, already normalised) to `pieces`, in order; the
// pieces are non-empty views into `text` and concatenate to it. O(size).
void SplitPretokens(PreTokenizer kind, std::string_view text,
                    std::vector<std::string_view>& pieces);

// The Qwen2 split (kQwen2).
inline void SplitPretokens(std::string_view text, std::vector<std::string_view>& pieces) {
  SplitPretokens(PreTokenizer::kQwen2, text, pieces);
}

}  // namespace dv::tok
