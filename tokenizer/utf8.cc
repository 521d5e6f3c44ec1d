#include "tokenizer/utf8.h"

namespace dv::tok {
namespace {

// Length of the well-formed prefix of the sequence starting at bytes[pos] that is consistent with
// Table 3-7, and whether it is a complete code point. A lead byte that can never start a sequence
// gives {1, false}: it is its own maximal subpart.
struct SequenceCheck {
  size_t length;
  bool complete;
};

SequenceCheck CheckSequence(std::string_view bytes, size_t pos) {
  const auto b0 = static_cast<unsigned char>(bytes[pos]);
  if (b0 < 0x80) return {1, true};
  size_t need = 0;
  unsigned char lo = 0x80;  // allowed range of the second byte; later bytes are 80..BF
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 == 0xE0) {
    need = 3;
    lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 3;
  } else if (b0 == 0xED) {
    need = 3;
    hi = 0x9F;  // excludes the surrogates D800..DFFF
  } else if (b0 == 0xF0) {
    need = 4;
    lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 4;
  } else if (b0 == 0xF4) {
    need = 4;
    hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {1, false};  // 80..C1 and F5..FF never start a sequence
  }
  for (size_t k = 1; k < need; ++k) {
    if (pos + k >= bytes.size()) return {k, false};
    const auto b = static_cast<unsigned char>(bytes[pos + k]);
    const unsigned char min = k == 1 ? lo : 0x80;
    const unsigned char max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) return {k, false};
  }
  return {need, true};
}

}  // namespace

bool IsValidUtf8(std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const SequenceCheck check = CheckSequence(bytes, pos);
    if (!check.complete) return false;
    pos += check.length;
  }
  return true;
}

std::string RepairUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 8);
  size_t pos = 0;
  while (pos < bytes.size()) {
    const SequenceCheck check = CheckSequence(bytes, pos);
    if (check.complete) {
      out.append(bytes.substr(pos, check.length));
    } else {
      AppendUtf8(kReplacementChar, out);
    }
    pos += check.length;
  }
  return out;
}

void AppendUtf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0u | (cp >> 6)));
    out.push_back(static_cast<char>(0x80u | (cp & 0x3Fu)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0u | (cp >> 12)));
    out.push_back(static_cast<char>(0x80u | ((cp >> 6) & 0x3Fu)));
    out.push_back(static_cast<char>(0x80u | (cp & 0x3Fu)));
  } else {
    out.push_back(static_cast<char>(0xF0u | (cp >> 18)));
    out.push_back(static_cast<char>(0x80u | ((cp >> 12) & 0x3Fu)));
    out.push_back(static_cast<char>(0x80u | ((cp >> 6) & 0x3Fu)));
    out.push_back(static_cast<char>(0x80u | (cp & 0x3Fu)));
  }
}

}  // namespace dv::tok
