// Base64 for DSSE envelopes. Encoding is always the standard alphabet with padding (RFC 4648 §4);
// decoding accepts the standard and the URL-safe alphabet (§5), with or without padding, because
// the DSSE specification allows either and other signers differ.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dv::attest {

// Standard alphabet, '=' padded. Never fails.
std::string Base64Encode(std::string_view bytes);

// The decoded bytes, or nullopt when `text` is not base64: a character outside both alphabets,
// both alphabets mixed, whitespace, wrong padding, an impossible length, or non-zero unused bits.
// The empty string decodes to empty bytes.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace dv::attest
