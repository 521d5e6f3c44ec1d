#pragma once
// NFC normalisation (the Qwen3 tokenizer's normalizer) through ICU, frozen at Unicode 15.0 like the
// character classes: code points assigned later pass through unchanged and block composition.
#include <string>
#include <string_view>

namespace dv::tok {

// Returns NFC(text). `text` must be well-formed UTF-8. The result views `text` itself when it is
// already NFC (always so for text below U+0300, checked without ICU), else `storage`.
std::string_view NormalizeNfc(std::string_view text, std::string& storage);

}  // namespace dv::tok
