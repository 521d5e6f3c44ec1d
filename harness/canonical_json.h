// Canonical JSON: the one serialisation of a JSON value that detverify hashes (machine ids,
// content-addressed ids). Keys sorted by byte value, no whitespace, UTF-8 output (non-ASCII left
// unescaped), integers only, so the bytes never depend on who wrote the value or on float
// formatting.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dv::harness {

// The canonical text of `value`. Throws std::invalid_argument naming the JSON pointer of the first
// floating-point number or binary value, or when a string is not valid UTF-8.
std::string CanonicalJson(const nlohmann::json& value);

}  // namespace dv::harness
