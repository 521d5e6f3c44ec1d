#include "attest/base64.h"

#include <cstdint>

namespace dv::attest {
namespace {

constexpr char kStandardAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

enum class Alphabet { kUnknown, kStandard, kUrlSafe };

// The 6-bit value of `c`, or -1. Records which alphabet the two alphabet-specific characters
// came from so that a mixed string can be refused.
int DecodeChar(char c, Alphabet* seen) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  Alphabet alphabet = Alphabet::kUnknown;
  int value = -1;
  switch (c) {
    case '+':
      alphabet = Alphabet::kStandard;
      value = 62;
      break;
    case '/':
      alphabet = Alphabet::kStandard;
      value = 63;
      break;
    case '-':
      alphabet = Alphabet::kUrlSafe;
      value = 62;
      break;
    case '_':
      alphabet = Alphabet::kUrlSafe;
      value = 63;
      break;
    default:
      return -1;
  }
  if (*seen != Alphabet::kUnknown && *seen != alphabet) return -1;
  *seen = alphabet;
  return value;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t group = (uint32_t{static_cast<uint8_t>(bytes[i])} << 16) |
                           (uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8) |
                           uint32_t{static_cast<uint8_t>(bytes[i + 2])};
    out.push_back(kStandardAlphabet[(group >> 18) & 63]);
    out.push_back(kStandardAlphabet[(group >> 12) & 63]);
    out.push_back(kStandardAlphabet[(group >> 6) & 63]);
    out.push_back(kStandardAlphabet[group & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t group = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) group |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out.push_back(kStandardAlphabet[(group >> 18) & 63]);
    out.push_back(kStandardAlphabet[(group >> 12) & 63]);
    out.push_back(rest == 2 ? kStandardAlphabet[(group >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  size_t n = text.size();
  size_t padding = 0;
  while (n > 0 && text[n - 1] == '=') {
    --n;
    ++padding;
  }
  // Padding, when present, must complete the last quantum exactly; without it the length alone
  // must still be reachable (a single leftover character carries fewer than 8 bits).
  if (padding > 2) return std::nullopt;
  if (padding > 0 && text.size() % 4 != 0) return std::nullopt;
  if (n % 4 == 1) return std::nullopt;

  std::string out;
  out.reserve(n * 3 / 4);
  Alphabet seen = Alphabet::kUnknown;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    const int value = DecodeChar(text[i], &seen);
    if (value < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFFu));
      acc &= (1u << bits) - 1u;
    }
  }
  // Non-zero unused bits mean a second spelling of the same bytes; refuse it so every byte
  // string has exactly one accepted encoding per alphabet.
  if (acc != 0) return std::nullopt;
  return out;
}

}  // namespace dv::attest
