// tokenizer.gguf, the tokenizer an artifact prepared from a GGUF keeps (gguf/gguf_writer.h), and
// the rule that finds a model's tokenizer (gguf/model_tokenizer.h): the written file holds the
// source's tokenizer metadata value for value; on SmolLM2 (skipped when not installed) it
// encodes Hugging Face's ids for every fixture string and renders Hugging Face's chat prompts
// (tests/tokenizer/data/smollm2_*.jsonl, made by Hugging Face tokenizers/transformers).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/model_cache.h"
#include "gguf/model_tokenizer.h"
#include "tests/support/scratch_files.h"
#include "tests/support/smollm2.h"
#include "tests/tokenizer/qwen3_test_data.h"

namespace dv::gguf {
namespace {

namespace fs = std::filesystem;
using tok::testing::FromHex;
using tok::testing::ReadJsonl;

bool Kept(std::string_view key) {
  return key == "general.architecture" || key == "general.name" || key.starts_with("tokenizer.");
}

void ExpectSameKeptMetadata(const GgufFile& src, const GgufFile& out) {
  std::vector<const MetadataEntry*> want;
  for (const MetadataEntry& e : src.metadata()) {
    if (Kept(e.key)) want.push_back(&e);
  }
  ASSERT_EQ(out.metadata().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const MetadataEntry& a = *want[i];
    const MetadataEntry& b = out.metadata()[i];
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.value.type(), b.value.type()) << a.key;
    EXPECT_EQ(a.value.element_type(), b.value.element_type()) << a.key;
    EXPECT_EQ(a.value.size(), b.value.size()) << a.key;
    EXPECT_EQ(a.value.Strings(), b.value.Strings()) << a.key;
    EXPECT_TRUE(std::equal(a.value.raw().begin(), a.value.raw().end(), b.value.raw().begin(),
                           b.value.raw().end()))
        << a.key;
  }
  EXPECT_TRUE(out.tensors().empty());
}

TEST(GgufWriterTest, KeepsTheTokenizerMetadataValueForValue) {
  const GgufFile src = GgufFile::Open(std::string(DV_GGUF_TEST_DATA_DIR) + "/llama_tiny.gguf");
  const test_files::ScratchDir scratch("gguf-writer");
  const std::string path = scratch.File("tokenizer.gguf");
  WriteTokenizerGguf(src, path);
  ExpectSameKeptMetadata(src, GgufFile::Open(path));
}

TEST(GgufWriterTest, TheArtifactsTokenizerGgufComesBeforeItsTokenizerJson) {
  const test_files::ScratchDir scratch("gguf-writer");
  const std::string dir = scratch.Path().string();
  EXPECT_EQ(TokenizerPathFor(dir), tok::DefaultTokenizerPath());
  std::ofstream(dir + "/tokenizer.json") << "{}";
  EXPECT_EQ(TokenizerPathFor(dir), dir + "/tokenizer.json");
  WriteTokenizerGguf(GgufFile::Open(std::string(DV_GGUF_TEST_DATA_DIR) + "/llama_tiny.gguf"),
                     dir + "/" + kArtifactTokenizerFile);
  EXPECT_EQ(TokenizerPathFor(dir), dir + "/tokenizer.gguf");
  EXPECT_EQ(TokenizerPathFor(""), tok::DefaultTokenizerPath());
}

TEST(GgufWriterTest, SmolLM2TokenizerGgufEncodesAndChatsLikeHuggingFace) {
  DV_REQUIRE_SMOLLM2(model);
  const GgufFile src = GgufFile::Open(model);
  const test_files::ScratchDir scratch("gguf-writer");
  const std::string path = scratch.File("tokenizer.gguf");
  WriteTokenizerGguf(src, path);
  ExpectSameKeptMetadata(src, GgufFile::Open(path));
  EXPECT_LT(fs::file_size(path), fs::file_size(SmolLM2Path()) / 20);
  const ModelTokenizer t = LoadModelTokenizer(path);
  EXPECT_TRUE(t.from_gguf);
  int mismatches = 0;
  const auto rows = ReadJsonl("smollm2_encode.jsonl");
  for (const auto& row : rows) {
    const std::string bytes = row.contains("hex") ? FromHex(row["hex"].get<std::string>())
                                                  : row["text"].get<std::string>();
    mismatches += t.tokenizer.Encode(bytes) != row["ids"].get<std::vector<int32_t>>();
  }
  EXPECT_EQ(mismatches, 0) << "of " << rows.size();
  for (const auto& row : ReadJsonl("smollm2_chat.jsonl")) {
    std::vector<tok::ChatMessage> messages;
    for (const auto& m : row["messages"]) {
      messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>(), {}});
    }
    const std::string text = t.Chat().Render(messages, row["add_generation_prompt"].get<bool>());
    EXPECT_EQ(text, row["text"].get<std::string>());
    EXPECT_EQ(t.tokenizer.Encode(text), row["ids"].get<std::vector<int32_t>>());
  }
}

}  // namespace
}  // namespace dv::gguf
