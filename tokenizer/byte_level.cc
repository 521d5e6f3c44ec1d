#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace dv::tok {
namespace {

constexpr bool IsPrintableByte(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

constexpr std::array<char32_t, 256> MakeByteToUnicode() {
  std::array<char32_t, 256> table{};
  char32_t next = 0x100;
  for (unsigned b = 0; b < 256; ++b) table[b] = IsPrintableByte(b) ? b : next++;
  return table;
}

constexpr std::array<char32_t, 256> kByteToUnicode = MakeByteToUnicode();

// Every image lies below U+0144, so the inverse is a small dense table.
constexpr char32_t kImageLimit = 0x144;

constexpr std::array<int16_t, kImageLimit> MakeUnicodeToByte() {
  std::array<int16_t, kImageLimit> table{};
  for (auto& entry : table) entry = -1;
  for (unsigned b = 0; b < 256; ++b) table[kByteToUnicode[b]] = static_cast<int16_t>(b);
  return table;
}

constexpr std::array<int16_t, kImageLimit> kUnicodeToByte = MakeUnicodeToByte();

}  // namespace

char32_t ByteToUnicode(uint8_t byte) { return kByteToUnicode[byte]; }

int UnicodeToByte(char32_t cp) { return cp < kImageLimit ? kUnicodeToByte[cp] : -1; }

std::string BytesToByteLevel(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) AppendUtf8(kByteToUnicode[static_cast<unsigned char>(c)], out);
  return out;
}

std::string ByteLevelToBytes(std::string_view token) {
  if (!IsValidUtf8(token)) return std::string(token);
  std::string out;
  out.reserve(token.size());
  size_t pos = 0;
  while (pos < token.size()) {
    char32_t cp = 0;
    pos += DecodeUtf8At(token, pos, cp);
    const int byte = UnicodeToByte(cp);
    if (byte < 0) return std::string(token);
    out.push_back(static_cast<char>(byte));
  }
  return out;
}

}  // namespace dv::tok
