#pragma once
// Shared by the tokenizer tests: the real Qwen3 tokenizer (loaded once) and the JSONL fixtures.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace dv::tok::testing {

// The tokenizer at DefaultTokenizerPath(), loaded on first use; nullptr if that file is absent
// (tests then GTEST_SKIP: the unit label must pass on machines without shared/).
const Tokenizer* Qwen3TokenizerOrNull();

// Rows of tests/tokenizer/data/<name>, without the leading {"meta": ...} line. Fails the test (and
// returns what it read) if the file is missing or a line is not JSON.
std::vector<nlohmann::json> ReadJsonl(const std::string& name);

// Text for a failure message: JSON-escaped and cut to `max_chars`.
std::string Printable(const std::string& bytes, size_t max_chars = 120);

// Bytes from lowercase hex.
std::string FromHex(const std::string& hex);

}  // namespace dv::tok::testing
