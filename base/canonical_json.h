// Canonical JSON: the one serialisation of a JSON value that detverify hashes (machine ids,
// content-addressed ids, run plans). Keys sorted by byte value, no whitespace, UTF-8 output
// (non-ASCII left unescaped), integers only, so the bytes never depend on who wrote the value or
// on float formatting. Outside the integer core (nlohmann::json parses and prints doubles).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/expected_error.h"

namespace dv {

// A value that has no canonical form (a floating-point number, a binary value, a string that is
// not UTF-8). An expected failure: such values come from input files.
class CanonicalJsonError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

// The canonical text of `value`. Throws CanonicalJsonError naming the JSON pointer of the first
// floating-point number or binary value, or when a string is not valid UTF-8.
std::string CanonicalJson(const nlohmann::json& value);

// True when `json_text` parses, holds no floating-point number (objects, arrays, strings,
// integers, booleans and null only) and CanonicalJson reproduces it byte for byte.
bool IsCanonicalJson(std::string_view json_text);

}  // namespace dv
