// Bad tokenizer.json files become a TokenizerError with one line naming the file and the problem.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/tokenizer/synthetic_tokenizer_json.h"
#include "tokenizer/tokenizer.h"

namespace dv::tok {
namespace {

using nlohmann::json;
using testing::SyntheticTokenizerJson;

json Valid() { return SyntheticTokenizerJson({"ab"}, json::array({"a b"})); }

// Loads `document` and returns the error message ("" if it loaded).
std::string LoadError(const std::string& document) {
  try {
    Tokenizer::FromJson(document, "bad.json");
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "";
}

void ExpectRejected(const json& document, const std::string& problem) {
  const std::string message = LoadError(document.dump());
  EXPECT_EQ(message.rfind("bad.json: ", 0), 0u) << message;
  EXPECT_NE(message.find(problem), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(TokenizerErrorsTest, SyntheticDocumentLoads) { EXPECT_EQ(LoadError(Valid().dump()), ""); }

TEST(TokenizerErrorsTest, MissingFileNamesThePath) {
  const std::string path = "/nonexistent/dir/tokenizer.json";
  try {
    Tokenizer::FromFile(path);
    FAIL() << "loaded a missing file";
  } catch (const TokenizerError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
  }
}

TEST(TokenizerErrorsTest, TruncatedFileIsNotJson) {
  const auto path = std::filesystem::temp_directory_path() / "dv_tok_truncated_tokenizer.json";
  {
    std::ofstream out(path);
    out << Valid().dump().substr(0, 500);
  }
  try {
    Tokenizer::FromFile(path.string());
    FAIL() << "loaded a truncated file";
  } catch (const TokenizerError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(path.string() + ": not valid JSON", 0), 0u) << message;
  }
  std::filesystem::remove(path);
}

// A key twice (two "model"s, a vocabulary entry twice) means different tokenizers to different
// readers: refused, with the line.
TEST(TokenizerErrorsTest, DuplicateKeysAreRejected) {
  const std::string text = Valid().dump(1);
  const std::string doubled_model = "{\n\"model\": {},\n" + text.substr(2);
  std::string message = LoadError(doubled_model);
  EXPECT_EQ(message.rfind("bad.json: duplicate key \"model\"", 0), 0u) << message;
  EXPECT_NE(message.find("(line "), std::string::npos) << message;
  std::string vocab_twice = Valid().dump();
  const size_t vocab = vocab_twice.find("\"vocab\":{");
  ASSERT_NE(vocab, std::string::npos) << vocab_twice;
  vocab_twice.insert(vocab + 9, "\"ab\":0,");
  message = LoadError(vocab_twice);
  EXPECT_NE(message.find("duplicate key \"ab\""), std::string::npos) << message;
}

TEST(TokenizerErrorsTest, RejectsMalformedDocuments) {
  ExpectRejected(json::array(), "top level must be a JSON object");
  EXPECT_NE(LoadError("{\"model\": "), "");
  json doc = Valid();
  doc.erase("model");
  ExpectRejected(doc, "model must be an object");
  doc = Valid();
  doc["model"]["vocab"]["zz"] = -3;
  ExpectRejected(doc, "model.vocab[\"zz\"] must be an id");
  doc = Valid();
  doc["model"]["vocab"]["zz"] = 0;
  ExpectRejected(doc, "uses id 0 twice");
  doc = Valid();
  doc["model"]["merges"] = json::array({"a b c"});
  ExpectRejected(doc, "model.merges[0] \"a b c\" is not two tokens");
  doc = Valid();
  doc["model"]["merges"] = json::array({json::array({"a"})});
  ExpectRejected(doc, "model.merges[0] must be");
  doc = Valid();
  doc["model"]["merges"] = json::array({"a c"});
  ExpectRejected(doc, "model.merges[0] (a c) uses a token missing from model.vocab");
  doc = Valid();
  doc["model"]["vocab"].erase("a");
  ExpectRejected(doc, "byte-level token a (byte 0x61) is missing");
  doc = Valid();
  doc["added_tokens"] = json::array({{{"content", "<x>"}}});
  ExpectRejected(doc, "added_tokens[0] must be an object with \"id\" and \"content\"");
  doc = Valid();
  doc["model"]["type"] = 7;
  ExpectRejected(doc, "model.type must be a string");
}

TEST(TokenizerErrorsTest, RejectsWhatItDoesNotImplement) {
  json doc = Valid();
  doc["model"]["type"] = "WordPiece";
  ExpectRejected(doc, "unsupported model type \"WordPiece\"");
  doc = Valid();
  doc["model"].erase("type");
  ExpectRejected(doc, "model.type is missing");
  doc = Valid();
  doc["model"]["dropout"] = 0.1;
  ExpectRejected(doc, "unsupported model.dropout");
  doc = Valid();
  doc["model"]["byte_fallback"] = true;
  ExpectRejected(doc, "unsupported model.byte_fallback");
  doc = Valid();
  doc["model"]["ignore_merges"] = true;
  ExpectRejected(doc, "unsupported model.ignore_merges");
  doc = Valid();
  doc["normalizer"] = {{"type", "NFKC"}};
  ExpectRejected(doc, "unsupported normalizer");
  doc = Valid();
  doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+";
  ExpectRejected(doc, "unsupported pre_tokenizer");
  doc = Valid();
  doc["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  ExpectRejected(doc, "unsupported pre_tokenizer");
  doc = Valid();
  doc["decoder"] = nullptr;
  ExpectRejected(doc, "unsupported decoder");
  doc = Valid();
  doc["post_processor"] = {{"type", "TemplateProcessing"}};
  ExpectRejected(doc, "unsupported post_processor");
  doc = Valid();
  doc["truncation"] = {{"max_length", 8}};
  ExpectRejected(doc, "unsupported truncation");
  doc = Valid();
  doc["added_tokens"] = json::array({{{"id", 300}, {"content", "<x>"}, {"lstrip", true}}});
  ExpectRejected(doc, "sets unsupported option \"lstrip\"");
  doc = Valid();
  doc["added_tokens"] = json::array({{{"id", 256}, {"content", "<x>"}}});
  ExpectRejected(doc, "reuses id 256");
}

}  // namespace
}  // namespace dv::tok
