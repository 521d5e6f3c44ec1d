// JSON that means one thing: every JSON file detverify reads (artifact and safetensors headers,
// config.json, tokenizer.json, DSSE envelopes and their in-toto Statements, published hashes) is
// parsed here, and an object with the same key twice is refused. nlohmann::json alone keeps the
// last duplicate silently, so a DSSE envelope with two `payload` members, or a config.json with
// two `eos_token_id`s, would mean whatever the last one says while another tool reads the first.
// Outside the integer core (nlohmann::json parses doubles).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/expected_error.h"

namespace dv {

// Why a text is not one unambiguous JSON value: where (the 1-based line) and what.
struct JsonProblem {
  enum class Kind { kMalformed, kDuplicateKey };
  Kind kind = Kind::kMalformed;
  size_t line = 1;
  // kMalformed: the parser's message ("syntax error while parsing value - ..."); kDuplicateKey:
  // "duplicate key \"payload\" (first at line 2)".
  std::string message;
  // "malformed JSON (<message>)" or the duplicate-key message.
  std::string Describe() const;
  // "<source>:<line>: <Describe()>"
  std::string Where(const std::string& source) const;
};

// Parses `text` as one JSON value into `out`. Returns false with `problem` set when the text is
// malformed, or when any object in it (at any depth) has a key twice.
bool ParseJsonStrict(std::string_view text, nlohmann::json& out, JsonProblem& problem);

// A JSON text that ParseJsonStrict refused; what() is JsonProblem::Where(source).
class JsonError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

// The same, throwing JsonError "<source>:<line>: <problem>".
nlohmann::json ParseJsonStrict(std::string_view text, const std::string& source);

}  // namespace dv
