#pragma once
// Small tokenizer.json documents for tests that must not depend on the real Qwen3 file.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dv::tok::testing {

// A valid Qwen2-style tokenizer.json: ids 0..255 are the byte-level tokens (id = byte), then
// `extra_tokens` (byte-level spelling) from 256 on; `merges` is written as given.
nlohmann::json SyntheticTokenizerJson(const std::vector<std::string>& extra_tokens,
                                      const nlohmann::json& merges,
                                      const nlohmann::json& added_tokens = nlohmann::json::array());

}  // namespace dv::tok::testing
