#include "tests/tokenizer/qwen3_test_data.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

namespace dv::tok::testing {

const Tokenizer* Qwen3TokenizerOrNull() {
  static const std::unique_ptr<Tokenizer> tokenizer = []() -> std::unique_ptr<Tokenizer> {
    const std::string path = DefaultTokenizerPath();
    if (!std::filesystem::exists(path)) return nullptr;
    return std::make_unique<Tokenizer>(Tokenizer::FromFile(path));
  }();
  return tokenizer.get();
}

std::vector<nlohmann::json> ReadJsonl(const std::string& name) {
  const char* source_dir = std::getenv("DETVERIFY_SOURCE_DIR");
  const std::string dir = source_dir != nullptr ? std::string(source_dir) + "/tests/tokenizer/data"
                                                : DV_TOKENIZER_TEST_DATA_DIR;
  const std::string path = dir + "/" + name;
  std::ifstream in(path);
  std::vector<nlohmann::json> rows;
  if (!in) {
    ADD_FAILURE() << "cannot open fixture " << path;
    return rows;
  }
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded()) {
      ADD_FAILURE() << path << ":" << number << ": not JSON";
      continue;
    }
    if (!row.contains("meta")) rows.push_back(std::move(row));
  }
  return rows;
}

std::string Printable(const std::string& bytes, size_t max_chars) {
  std::string text =
      nlohmann::json(bytes).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > max_chars) text = text.substr(0, max_chars) + "...";
  return text;
}

std::string FromHex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

}  // namespace dv::tok::testing
