#include "base/canonical_json.h"

namespace dv {
namespace {

// Escapes a key for use in a JSON pointer (RFC 6901: '~' -> "~0", '/' -> "~1").
std::string PointerToken(const std::string& key) {
  std::string token;
  for (char c : key) {
    if (c == '~') {
      token += "~0";
    } else if (c == '/') {
      token += "~1";
    } else {
      token += c;
    }
  }
  return token;
}

void RejectNonCanonical(const nlohmann::json& value, const std::string& pointer) {
  switch (value.type()) {
    case nlohmann::json::value_t::number_float:
      throw CanonicalJsonError("canonical JSON: " + (pointer.empty() ? "/" : pointer) +
                               " is a floating-point number; hashed content must use integers "
                               "or strings");
    case nlohmann::json::value_t::binary:
      throw CanonicalJsonError("canonical JSON: " + (pointer.empty() ? "/" : pointer) +
                               " is a binary value");
    case nlohmann::json::value_t::object:
      for (const auto& [key, item] : value.items()) {
        RejectNonCanonical(item, pointer + "/" + PointerToken(key));
      }
      break;
    case nlohmann::json::value_t::array:
      for (size_t i = 0; i < value.size(); ++i) {
        RejectNonCanonical(value[i], pointer + "/" + std::to_string(i));
      }
      break;
    default:
      break;
  }
}

bool HoldsOnlyExactValues(const nlohmann::json& value) {
  if (value.is_number_float() || value.is_binary()) return false;
  if (value.is_structured()) {
    for (const nlohmann::json& child : value) {
      if (!HoldsOnlyExactValues(child)) return false;
    }
  }
  return true;
}

}  // namespace

std::string CanonicalJson(const nlohmann::json& value) {
  RejectNonCanonical(value, "");
  // nlohmann::json keeps object keys in a std::map, so dump() already emits them sorted by byte
  // value; indent -1 emits no whitespace; the strict handler refuses invalid UTF-8 rather than
  // replacing it, which would make two different inputs hash alike.
  try {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::type_error&) {
    throw CanonicalJsonError("canonical JSON: a string is not valid UTF-8");
  }
}

bool IsCanonicalJson(std::string_view json_text) {
  const nlohmann::json value =
      nlohmann::json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (value.is_discarded() || !HoldsOnlyExactValues(value)) return false;
  try {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict) == json_text;
  } catch (const nlohmann::json::exception&) {  // invalid UTF-8 inside a string
    return false;
  }
}

}  // namespace dv
