#include "tokenizer/nfc.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uniset.h>
#include <unicode/unistr.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "tokenizer/char_class.h"

namespace dv::tok {
namespace {

// NFC restricted to code points of Unicode 15.0 and earlier ([:Age=15.0:] is cumulative).
// FilteredNormalizer2 treats the others as boundaries, which is exactly how a Unicode 15.0
// normaliser sees them (unassigned starters that compose with nothing). On ICU 72 (Unicode 15.0)
// the filter changes nothing.
class FrozenNfc {
 public:
  FrozenNfc() {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
    const std::string pattern = "[:Age=" + std::to_string(kUnicodeMajorVersion) + "." +
                                std::to_string(kUnicodeMinorVersion) + ":]";
    set_ = std::make_unique<icu::UnicodeSet>(icu::UnicodeString::fromUTF8(pattern), status);
    if (U_FAILURE(status)) {
      // ICU's own data is missing or broken: nothing a caller can fix, so it is not a
      // TokenizerError.
      throw std::logic_error(std::string("ICU NFC data unavailable: ") + u_errorName(status));
    }
    set_->freeze();
    filtered_ = std::make_unique<icu::FilteredNormalizer2>(*nfc, *set_);
  }

  std::string Normalize(std::string_view text) const {
    UErrorCode status = U_ZERO_ERROR;
    std::string out;
    out.reserve(text.size());
    icu::StringByteSink<std::string> sink(&out);
    filtered_->normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())),
                             sink, nullptr, status);
    if (U_FAILURE(status)) {
      throw std::logic_error(std::string("ICU NFC failed: ") + u_errorName(status));
    }
    return out;
  }

 private:
  std::unique_ptr<icu::UnicodeSet> set_;
  std::unique_ptr<icu::FilteredNormalizer2> filtered_;
};

const FrozenNfc& Nfc() {
  static const FrozenNfc nfc;
  return nfc;
}

// Code points below U+0300 all have NFC_Quick_Check=Yes and combining class 0, so text made of them
// is NFC; in UTF-8 such text has no byte >= 0xCC (the lead byte of U+0300).
bool BelowCombiningMarks(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0xCC) return false;
  }
  return true;
}

}  // namespace

std::string_view NormalizeNfc(std::string_view text, std::string& storage) {
  if (BelowCombiningMarks(text)) return text;
  storage = Nfc().Normalize(text);
  return storage;
}

}  // namespace dv::tok
