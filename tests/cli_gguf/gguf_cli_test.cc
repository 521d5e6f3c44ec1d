// `detverify gguf-info` and `detverify tokenize --gguf` through the binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/model_cache.h"
#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::Detverify;
using fleet_testing::LineCount;
using fleet_testing::SourceDir;

std::string Fixture(const std::string& name) { return SourceDir() + "/tests/data/gguf/" + name; }

TEST(GgufCli, InfoShowsMetadataTensorsAndTheLlamaConfig) {
  const auto r = Detverify({"gguf-info", Fixture("llama_tiny.gguf")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("GGUF v3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("llama.attention.head_count_kv"), std::string::npos);
  EXPECT_NE(r.out.find("blk.1.attn_q.weight"), std::string::npos);
  EXPECT_NE(r.out.find("Q4_1    [32, 32]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hidden 32, layers 2, heads 4, KV heads 2, head_dim 8"), std::string::npos);
  EXPECT_NE(r.out.find("untied embeddings"), std::string::npos);
  // Its toy vocabulary names no pre-tokenizer: said once, not an error of the verb.
  EXPECT_NE(r.out.find("tokenizer not supported: metadata tokenizer.ggml.pre is missing"),
            std::string::npos);
}

TEST(GgufCli, InfoJsonIsMachineReadable) {
  const auto r = Detverify({"gguf-info", Fixture("types.gguf"), "--json", "--items", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("version"), 3);
  EXPECT_EQ(j.at("alignment"), 32);
  EXPECT_EQ(j.at("tensors").size(), 14u);
  EXPECT_EQ(j.at("tensors")[0].at("shape"), nlohmann::json::array({2, 8}));
  bool saw_array = false;
  for (const auto& m : j.at("metadata")) {
    if (m.at("key") == "test.array.string") {
      saw_array = true;
      EXPECT_EQ(m.at("type"), "ARRAY[STRING]");
      EXPECT_EQ(m.at("value").at("count"), 3);
      EXPECT_EQ(m.at("value").at("items").size(), 2u);
    }
  }
  EXPECT_TRUE(saw_array);
  EXPECT_TRUE(j.at("llama_error").get<std::string>().starts_with("architecture \"fixture\""));
}

TEST(GgufCli, BrokenFilesAreOneLineAndExitTwo) {
  fleet_testing::ScratchDir dir("gguf-cli");
  const std::string path = dir.File("cut.gguf");
  const std::string whole = fleet_testing::ReadFile(Fixture("types.gguf"));
  fleet_testing::WriteFile(path, whole.substr(0, 700));
  for (const auto& args : {std::vector<std::string>{"gguf-info", path},
                           std::vector<std::string>{"tokenize", "--gguf", path, "--text", "x"},
                           std::vector<std::string>{"gguf-info", dir.File("absent.gguf")}}) {
    const auto r = Detverify(args);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(LineCount(r.err), 1u) << r.err;
    EXPECT_TRUE(r.err.starts_with("detverify: " + args[args[0] == "gguf-info" ? 1 : 2] + ": "))
        << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  const auto both = Detverify({"tokenize", "--gguf", path, "--tokenizer", "x.json", "--text", "x"});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
}

#define DV_REQUIRE_SMOLLM2(path)                                                             \
  const std::string path = gguf::SmolLM2Path();                                              \
  if (!std::filesystem::is_regular_file(path)) {                                             \
    GTEST_SKIP() << "SmolLM2 GGUF not installed at " << path                                 \
                 << " (run scripts/install_deps.sh --with-models, or set DETVERIFY_MODELS)"; \
  }

// The ids Hugging Face gives (tests/tokenizer/data/smollm2_*.jsonl), through the binary.
TEST(GgufCli, TokenizeWithTheGgufTokenizerAndChatTemplate) {
  DV_REQUIRE_SMOLLM2(model);
  std::ifstream chats(SourceDir() + "/tests/tokenizer/data/smollm2_chat.jsonl");
  std::string line;
  std::getline(chats, line);  // meta
  nlohmann::json expected;
  while (std::getline(chats, line)) {
    const auto row = nlohmann::json::parse(line);
    if (row["messages"].size() == 1 && row["messages"][0]["role"] == "user" &&
        row["add_generation_prompt"].get<bool>()) {
      expected = row;
      break;
    }
  }
  ASSERT_FALSE(expected.is_null());
  const std::string text = expected["messages"][0]["content"].get<std::string>();
  const auto chat = Detverify({"tokenize", "--gguf", model, "--chat", "--text", text, "--json"});
  ASSERT_EQ(chat.code, 0) << chat.err;
  EXPECT_EQ(nlohmann::json::parse(chat.out).at("ids"), expected["ids"]);

  const auto plain = Detverify({"tokenize", "--gguf", model, "--text", "a  1"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.out, "81,256,33\n");  // smollm2_encode.jsonl: Digits keeps "  " whole
  const auto decoded = Detverify({"tokenize", "--gguf", model, "--ids", "1,81,256,33,2"});
  ASSERT_EQ(decoded.code, 0) << decoded.err;
  EXPECT_EQ(decoded.out, "<|im_start|>a  1<|im_end|>\n");
}

TEST(GgufCli, InfoOnSmolLM2ShowsItsTokenizer) {
  DV_REQUIRE_SMOLLM2(model);
  const auto r = Detverify({"gguf-info", model, "--json", "--items", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("tensors").size(), 272u);
  EXPECT_EQ(j.at("llama").at("num_hidden_layers"), 30);
  EXPECT_EQ(j.at("tokenizer").at("pre_tokenizer"), "digits+gpt2");
  EXPECT_EQ(j.at("tokenizer").at("chat_template"), "smollm2");
}

}  // namespace
}  // namespace dv
