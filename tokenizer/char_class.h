#pragma once
// Code-point classes used by the pre-tokenizer regex, from ICU's Unicode data frozen at Unicode
// 15.0: a code point first assigned in a later version counts as unassigned (kOther) whatever ICU
// is installed, so token ids never depend on the ICU version.
#include <array>
#include <cstdint>

namespace dv::tok {

// The regex distinguishes exactly these sets: \p{L}, \p{N}, [\r\n], the rest of \s (White_Space)
// and everything else.
enum class CharClass : uint8_t {
  kLetter,   // General_Category L (Lu Ll Lt Lm Lo)
  kNumber,   // General_Category N (Nd Nl No)
  kNewline,  // U+000A or U+000D (also White_Space)
  kSpace,    // White_Space other than U+000A and U+000D
  kOther,
};

// Classes of U+0000..U+007F, which no Unicode version changes; checked against ICU by a test.
inline constexpr std::array<CharClass, 128> kAsciiClasses = [] {
  std::array<CharClass, 128> table{};
  for (unsigned c = 0; c < 128; ++c) {
    CharClass k = CharClass::kOther;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) k = CharClass::kLetter;
    if (c >= '0' && c <= '9') k = CharClass::kNumber;
    if (c == '\t' || c == '\v' || c == '\f' || c == ' ') k = CharClass::kSpace;
    if (c == '\n' || c == '\r') k = CharClass::kNewline;
    table[c] = k;
  }
  return table;
}();

// The Unicode version the classes (and NFC) are frozen at: 15.0.
inline constexpr int kUnicodeMajorVersion = 15;
inline constexpr int kUnicodeMinorVersion = 0;

// False iff `cp` was first assigned after Unicode 15.0 (ICU's Age property; unassigned is 0.0).
bool AgeWithinFrozenVersion(char32_t cp);

// Class of a scalar value. O(1): the BMP from a table built from ICU on first use, other planes
// from ICU directly.
CharClass ClassifyCodePoint(char32_t cp);

// Class computed from ICU without tables; ClassifyCodePoint's reference twin.
CharClass ClassifyCodePointIcu(char32_t cp);

inline bool IsWhiteSpaceClass(CharClass c) {
  return c == CharClass::kSpace || c == CharClass::kNewline;
}

}  // namespace dv::tok
