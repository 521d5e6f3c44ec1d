#include "tokenizer/char_class.h"

#include <unicode/uchar.h>
#include <unicode/uversion.h>

#include <array>

namespace dv::tok {
namespace {

struct BmpTable {
  std::array<CharClass, 0x10000> classes;
  BmpTable() {
    for (char32_t cp = 0; cp < 0x10000; ++cp) classes[cp] = ClassifyCodePointIcu(cp);
  }
};

const BmpTable& Bmp() {
  static const BmpTable table;
  return table;
}

}  // namespace

bool AgeWithinFrozenVersion(char32_t cp) {
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(cp), age);
  return age[0] < kUnicodeMajorVersion ||
         (age[0] == kUnicodeMajorVersion && age[1] <= kUnicodeMinorVersion);
}

CharClass ClassifyCodePointIcu(char32_t cp) {
  if (cp == 0x0A || cp == 0x0D) return CharClass::kNewline;
  if (!AgeWithinFrozenVersion(cp)) return CharClass::kOther;
  const auto c = static_cast<UChar32>(cp);
  const uint32_t mask = U_GET_GC_MASK(c);
  if ((mask & U_GC_L_MASK) != 0) return CharClass::kLetter;
  if ((mask & U_GC_N_MASK) != 0) return CharClass::kNumber;
  if (u_hasBinaryProperty(c, UCHAR_WHITE_SPACE)) return CharClass::kSpace;
  return CharClass::kOther;
}

CharClass ClassifyCodePoint(char32_t cp) {
  if (cp < 0x10000) return Bmp().classes[cp];
  return ClassifyCodePointIcu(cp);
}

}  // namespace dv::tok
