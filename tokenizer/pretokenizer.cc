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

// Code points of a UTF-8 text with their classes, and runs of one class.
class CodePoints {
 public:
  explicit CodePoints(std::string_view text) : text_(text), size_(text.size()) {}

 protected:
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

  // Whether the code point at `pos` (< size) is U+0020 followed by a code point of class `cls`:
  // the optional leading space of " ?\p{L}+" and its siblings.
  bool SpaceThen(size_t pos, CharClass cls) const {
    return text_[pos] == ' ' && pos + 1 < size_ && At(pos + 1).cls == cls;
  }

  // The white-space run W starting at pos: its end, the start of its last code point and the end
  // of its last newline (0 if none).
  struct WhiteSpaceRun {
    size_t end;
    size_t last_start;
    size_t last_newline_end;
  };
  WhiteSpaceRun WhiteSpaceAt(size_t pos) const {
    WhiteSpaceRun run{pos, pos, 0};
    while (run.end < size_) {
      const CodePoint c = At(run.end);
      if (!IsWhiteSpaceClass(c.cls)) break;
      if (c.cls == CharClass::kNewline) run.last_newline_end = run.end + c.len;
      run.last_start = run.end;
      run.end += c.len;
    }
    return run;
  }

  // \s+(?!\S) then \s+ on W: all of W at the end of text, else W minus its last code point when
  // |W| >= 2, else W.
  size_t LookaheadWhiteSpaceEnd(size_t pos, const WhiteSpaceRun& run) const {
    if (run.end == size_) return run.end;
    if (run.last_start > pos) return run.last_start;
    return run.end;
  }

  std::string_view text_;
  size_t size_;
};

// kQwen2SplitPattern.
class Qwen2Matcher : public CodePoints {
 public:
  using CodePoints::CodePoints;

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
    if (c0.cls == CharClass::kLetter) return RunEnd(pos, CharClass::kLetter);
    if (c0.cls != CharClass::kNewline && c0.cls != CharClass::kNumber && pos + c0.len < size_ &&
        At(pos + c0.len).cls == CharClass::kLetter) {
      return RunEnd(pos + c0.len, CharClass::kLetter);
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
    // \s*[\r\n]+ matches W up to and including its last newline, if it has one; then the
    // lookahead alternatives.
    const WhiteSpaceRun run = WhiteSpaceAt(pos);
    if (run.last_newline_end > 0) return run.last_newline_end;
    return LookaheadWhiteSpaceEnd(pos, run);
  }

 private:
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
};

// kGpt2SplitPattern. Its contractions are case-sensitive ASCII, and newlines are plain white
// space.
class Gpt2Matcher : public CodePoints {
 public:
  using CodePoints::CodePoints;

  // End (byte offset) of the regex match starting at `pos` < size; as above, there are no gaps.
  size_t MatchEnd(size_t pos) const {
    const CodePoint c0 = At(pos);
    // 's|'t|'re|'ve|'m|'ll|'d
    if (c0.cp == '\'') {
      const size_t len = ContractionLength(pos + 1);
      if (len > 0) return pos + 1 + len;
    }
    //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+, each with U+0020 as the optional space
    for (const CharClass cls : {CharClass::kLetter, CharClass::kNumber, CharClass::kOther}) {
      if (c0.cls == cls) return RunEnd(pos, cls);
      if (SpaceThen(pos, cls)) return RunEnd(pos + 1, cls);
    }
    return LookaheadWhiteSpaceEnd(pos, WhiteSpaceAt(pos));
  }

 private:
  size_t ContractionLength(size_t pos) const {
    const std::string_view rest = text_.substr(pos);
    for (const std::string_view c : {"s", "t", "re", "ve", "m", "ll", "d"}) {
      if (rest.starts_with(c)) return c.size();
    }
    return 0;
  }
};

template <typename Matcher>
void SplitWith(std::string_view text, std::vector<std::string_view>& pieces) {
  const Matcher matcher(text);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = matcher.MatchEnd(pos);
    pieces.push_back(text.substr(pos, end - pos));
    pos = end;
  }
}

// Digits(individual_digits=true), then the GPT-2 split of each stretch between numbers: the
// lookahead of \s+(?!\S) sees a stretch's end as the end of text.
void SplitDigitsThenGpt2(std::string_view text, std::vector<std::string_view>& pieces) {
  size_t stretch = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto b = static_cast<unsigned char>(text[pos]);
    char32_t cp = b;
    const uint32_t len = b < 0x80 ? 1 : DecodeUtf8At(text, pos, cp);
    const CharClass cls = b < 0x80 ? kAsciiClasses[b] : ClassifyCodePoint(cp);
    if (cls == CharClass::kNumber) {
      if (pos > stretch) SplitWith<Gpt2Matcher>(text.substr(stretch, pos - stretch), pieces);
      pieces.push_back(text.substr(pos, len));
      stretch = pos + len;
    }
    pos += len;
  }
  if (text.size() > stretch) SplitWith<Gpt2Matcher>(text.substr(stretch), pieces);
}

}  // namespace

const char* PreTokenizerName(PreTokenizer kind) {
  switch (kind) {
    case PreTokenizer::kQwen2:
      return "qwen2";
    case PreTokenizer::kGpt2:
      return "gpt2";
    case PreTokenizer::kDigitsGpt2:
      return "digits+gpt2";
  }
  return "?";
}

void SplitPretokens(PreTokenizer kind, std::string_view text,
                    std::vector<std::string_view>& pieces) {
  switch (kind) {
    case PreTokenizer::kQwen2:
      SplitWith<Qwen2Matcher>(text, pieces);
      return;
    case PreTokenizer::kGpt2:
      SplitWith<Gpt2Matcher>(text, pieces);
      return;
    case PreTokenizer::kDigitsGpt2:
      SplitDigitsThenGpt2(text, pieces);
      return;
  }
}

}  // namespace dv::tok
