#include "tokenizer/pretokenizer.h"

#include <cstddef>
#include <cstdint>

#include "tokenizer/char_class.h"
#include "tokenizer/utf8.h"

namespace dv::tok {
namespace {

struct CodePoint {
  char32_t cp;
  CharClass cls;
  uint32_t len;  // bytes
};

class Matcher {
 public:
  explicit Matcher(std::string_view text) : text_(text), size_(text.size()) {}

  // End (byte offset) of the regex match starting at `pos` < size. Every code point starts a match
  // of some alternative (letters: 2, numbers: 3, white space: 7, the rest: 4), so there are no
  // gaps.
  size_t MatchEnd(size_t pos) const {
    const CodePoint c0 = At(pos);
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (c0.cp == '\'') {
      const size_t len = ContractionLength(pos + 1);
      if (len > 0) return pos + 1 + len;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (c0.cls == CharClass::kLetter) return LetterRunEnd(pos);
    if (c0.cls != CharClass::kNewline && c0.cls != CharClass::kNumber && pos + c0.len < size_ &&
        At(pos + c0.len).cls == CharClass::kLetter) {
      return LetterRunEnd(pos + c0.len);
    }
    // \p{N}: one code point, so digit runs split into single digits
    if (c0.cls == CharClass::kNumber) return pos + c0.len;
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'; only U+0020 is the optional space
    size_t start = pos;
    if (c0.cp == ' ' && pos + 1 < size_) start = pos + 1;
    if (At(start).cls == CharClass::kOther) {
      size_t end = RunEnd(start, CharClass::kOther);
      return RunEnd(end, CharClass::kNewline);
    }
    return WhiteSpaceMatchEnd(pos);
  }

 private:
  CodePoint At(size_t pos) const {
    const auto b = static_cast<unsigned char>(text_[pos]);
    if (b < 0x80) return {b, kAsciiClasses[b], 1};
    char32_t cp = 0;
    const uint32_t len = DecodeUtf8At(text_, pos, cp);
    return {cp, ClassifyCodePoint(cp), len};
  }

  size_t RunEnd(size_t pos, CharClass cls) const {
    while (pos < size_) {
      const CodePoint c = At(pos);
      if (c.cls != cls) break;
      pos += c.len;
    }
    return pos;
  }

  size_t LetterRunEnd(size_t pos) const { return RunEnd(pos, CharClass::kLetter); }

  // Case-insensitive letter test for the contractions. Under Unicode simple case folding the only
  // non-ASCII code point folding to one of s t r e v m l d is U+017F (to 's').
  bool IsLetterCi(size_t pos, char lower) const {
    if (pos >= size_) return false;
    const CodePoint c = At(pos);
    if (c.cp == static_cast<char32_t>(lower) || c.cp == static_cast<char32_t>(lower - 'a' + 'A')) {
      return true;
    }
    return lower == 's' && c.cp == 0x017F;
  }

  // Bytes after the apostrophe matched by the contraction alternative, or 0.
  size_t ContractionLength(size_t pos) const {
    if (pos >= size_) return 0;
    if (IsLetterCi(pos, 's')) return At(pos).len;
    if (IsLetterCi(pos, 't') || IsLetterCi(pos, 'm') || IsLetterCi(pos, 'd')) return 1;
    if ((IsLetterCi(pos, 'r') || IsLetterCi(pos, 'v')) && IsLetterCi(pos + 1, 'e')) return 2;
    if (IsLetterCi(pos, 'l') && IsLetterCi(pos + 1, 'l')) return 2;
    return 0;
  }

  // The three white-space alternatives, tried in order on the white-space run W starting at pos:
  //   \s*[\r\n]+  matches W up to and including its last newline, if it has one;
  //   \s+(?!\S)   matches all of W at the end of text, else W minus its last code point (|W| >= 2);
  //   \s+         matches W.
  size_t WhiteSpaceMatchEnd(size_t pos) const {
    size_t end = pos;
    size_t last_newline_end = 0;
    size_t last_start = pos;
    while (end < size_) {
      const CodePoint c = At(end);
      if (!IsWhiteSpaceClass(c.cls)) break;
      if (c.cls == CharClass::kNewline) last_newline_end = end + c.len;
      last_start = end;
      end += c.len;
    }
    if (last_newline_end > 0) return last_newline_end;
    if (end == size_) return end;
    if (last_start > pos) return last_start;
    return end;
  }

  std::string_view text_;
  size_t size_;
};

}  // namespace

void SplitPretokens(std::string_view text, std::vector<std::string_view>& pieces) {
  const Matcher matcher(text);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = matcher.MatchEnd(pos);
    pieces.push_back(text.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace dv::tok
