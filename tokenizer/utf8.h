#pragma once
// UTF-8 validation, repair and code-point access for the tokenizer. Text inside the tokenizer is
// always well-formed UTF-8 once it has passed RepairUtf8.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dv::tok {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// True if `bytes` is well-formed UTF-8 (Unicode Table 3-7: no overlongs, surrogates or > U+10FFFF).
bool IsValidUtf8(std::string_view bytes);

// Replaces each maximal subpart of an ill-formed subsequence by U+FFFD (Unicode §3.9, the practice
// of Python's bytes.decode(errors="replace") and Rust's String::from_utf8_lossy). Valid input is
// returned unchanged.
std::string RepairUtf8(std::string_view bytes);

// Appends the UTF-8 encoding of `cp` (must be a scalar value: <= U+10FFFF, not a surrogate).
void AppendUtf8(char32_t cp, std::string& out);

// Decodes the code point starting at valid[pos] and returns its length in bytes (1..4).
// Precondition: `valid` is well-formed UTF-8 and pos < valid.size().
inline uint32_t DecodeUtf8At(std::string_view valid, size_t pos, char32_t& cp) {
  const auto b0 = static_cast<unsigned char>(valid[pos]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  const auto cont = [&](size_t k) {
    return static_cast<char32_t>(static_cast<unsigned char>(valid[pos + k]) & 0x3Fu);
  };
  if (b0 < 0xE0) {
    cp = (static_cast<char32_t>(b0 & 0x1Fu) << 6) | cont(1);
    return 2;
  }
  if (b0 < 0xF0) {
    cp = (static_cast<char32_t>(b0 & 0x0Fu) << 12) | (cont(1) << 6) | cont(2);
    return 3;
  }
  cp = (static_cast<char32_t>(b0 & 0x07u) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
  return 4;
}

}  // namespace dv::tok
