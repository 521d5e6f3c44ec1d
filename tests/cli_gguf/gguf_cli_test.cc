// `detverify gguf-info`, `tokenize --gguf` and the float engine's `--gguf` (generate, ppl)
// through the binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/model_cache.h"
#include "tests/reports/fleet_fixtures.h"
#include "tests/support/smollm2.h"

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

// The float engine on the installed SmolLM2 GGUF through the verbs, against transformers loading
// the same file (tests/data/gguf/smollm2_float_reference.json,
// scripts/gguf/make_smollm2_float_reference.py).
nlohmann::json FloatReference() {
  std::ifstream in(Fixture("smollm2_float_reference.json"));
  return nlohmann::json::parse(in);
}

// --chat renders the GGUF's own template (SmolLM2's, with its default system turn) and the
// GGUF's tokenizer encodes it: the prompt ids are transformers' apply_chat_template, and the
// greedy answer is transformers' float64 one.
TEST(GgufCli, GenerateChatOnTheGgufIsTransformers) {
  DV_REQUIRE_SMOLLM2(path);
  const nlohmann::json chat = FloatReference()["chat"];
  const auto r = Detverify({"generate", "--engine", "float", "--gguf", path, "--chat", "--prompt",
                            chat["question"].get<std::string>(), "--max-new",
                            std::to_string(chat["greedy"].size()), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const nlohmann::json& row = j.at("rows")[0];
  EXPECT_EQ(row.at("prompt_ids"), chat["ids"]);
  EXPECT_EQ(row.at("tokens"), chat["greedy"]);
  EXPECT_EQ(row.at("text"), chat["text"]);
  EXPECT_EQ(j.at("checkpoint").at("sha256"), std::string(gguf::kSmolLM2Sha256));
}

// Perplexity of Sonnet 18 in 32-token windows: the GGUF's tokenizer gives transformers' token
// count, and the fp32 perplexity is transformers' float64 one within 1e-5 relative (a summation
// order apart; the logits are within 7e-4 of float64, tests/float_engine/gguf_float_test.cc).
TEST(GgufCli, PplOnTheGgufIsTransformers) {
  DV_REQUIRE_SMOLLM2(path);
  const nlohmann::json ref = FloatReference()["sonnet18_ppl"];
  const auto r = Detverify({"ppl", "--gguf", path, "--text",
                            SourceDir() + "/" + ref["text"].get<std::string>(), "--ctx",
                            std::to_string(ref["ctx"].get<int>()), "--json", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("input").at("tokens"), ref["tokens"]);
  EXPECT_EQ(j.at("scored_tokens"), ref["scored"]);
  const double expected = ref["perplexity"].get<double>();
  EXPECT_NEAR(j.at("perplexity").get<double>(), expected, 1e-5 * expected);
  EXPECT_EQ(j.at("model").at("gguf_sha256"), std::string(gguf::kSmolLM2Sha256));
}

// A GGUF is a float model: the int8 engine refuses it with one line naming what to do, and a
// file that is not a GGUF is one line naming the file; both exit 2.
TEST(GgufCli, GgufOptionErrors) {
  const auto int8 =
      Detverify({"generate", "--gguf", Fixture("llama_tiny.gguf"), "--prompt-ids", "1,2"});
  EXPECT_EQ(int8.code, 2);
  EXPECT_NE(int8.err.find("--gguf is a float model: run it with --engine float"), std::string::npos)
      << int8.err;
  EXPECT_EQ(LineCount(int8.err), 1) << int8.err;
  const std::string not_gguf = Fixture("expected.json");
  for (const auto& args :
       {std::vector<std::string>{"generate", "--engine", "float", "--gguf", not_gguf,
                                 "--prompt-ids", "1,2"},
        std::vector<std::string>{"ppl", "--gguf", not_gguf, "--ids", not_gguf},
        std::vector<std::string>{"bench", "--engine", "float", "--gguf", not_gguf}}) {
    const auto r = Detverify(args);
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(not_gguf), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_EQ(LineCount(r.err), 1) << args[0] << ": " << r.err;
  }
  const auto both = Detverify({"ppl", "--gguf", not_gguf, "--hf", "x", "--text", not_gguf});
  EXPECT_EQ(both.code, 2) << both.err;
}

}  // namespace
}  // namespace dv
