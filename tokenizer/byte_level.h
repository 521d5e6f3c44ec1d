#pragma once
// GPT-2's byte-level alphabet: every byte is shown as one printable code point so that BPE
// vocabularies can be stored as JSON strings ("Ġthe" is " the").
#include <cstdint>
#include <string>
#include <string_view>

namespace dv::tok {

// Bytes 21..7E, A1..AC and AE..FF map to themselves; the other 68 bytes map to U+0100, U+0101, ...
// in increasing byte order.
char32_t ByteToUnicode(uint8_t byte);

// Inverse of ByteToUnicode; -1 if `cp` is not the image of a byte.
int UnicodeToByte(char32_t cp);

// Byte-level form of raw bytes (each byte becomes the UTF-8 of ByteToUnicode(byte)).
std::string BytesToByteLevel(std::string_view bytes);

// Raw bytes of a vocabulary string. If any code point of `token` is not a byte image (or `token` is
// not valid UTF-8) the token's own bytes are returned, as Hugging Face's ByteLevel decoder does.
std::string ByteLevelToBytes(std::string_view token);

}  // namespace dv::tok
