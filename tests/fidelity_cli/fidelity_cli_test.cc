// `detverify compare` and `detverify ppl` through the binary on DetLLM's p-small fixture: the
// table, --json (the fixture's numbers), and one-line errors with exit code 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::Detverify;
using fleet_testing::ScratchDir;

std::string PSmall() { return fleet_testing::SourceDir() + "/tests/data/detllm/prepare/p-small"; }

std::string LastLine(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t.substr(t.rfind('\n') == std::string::npos ? 0 : t.rfind('\n') + 1);
}

TEST(CompareCli, TableAndJsonOnPSmall) {
  const auto table =
      Detverify({"compare", "--artifact", PSmall() + "/detllm_artifact", "--hf", PSmall() + "/hf",
                 "--ids", PSmall() + "/heldout_ids.json", "--quiet"});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("top-1 agreement                       464 / 512      90.62%"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("mean KL(float || int)"), std::string::npos);
  const auto js = Detverify({"compare", "--artifact", PSmall() + "/nosmooth/detllm_artifact",
                             "--hf", PSmall() + "/hf", "--ids", PSmall() + "/heldout_ids.json",
                             "--json", "--samples", "4", "--quiet"});
  ASSERT_EQ(js.code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["positions"], 256);
  EXPECT_EQ(j["int_top1"].size(), 256u);
  EXPECT_EQ(j["top1_agree_by_float_gap"].size(), 4u);
  EXPECT_EQ(j["artifact"]["model_safetensors_sha256"],
            "a3b9afe2f0a2f4155d5857ece11d71e65cfcabe71c42b41caab17ce9f9ef8b55");
}

TEST(PplCli, IntAndFloatOnPSmall) {
  for (const auto& model :
       {std::vector<std::string>{"--artifact", PSmall() + "/detllm_artifact"},
        std::vector<std::string>{"--hf", PSmall() + "/hf", "--dtype", "bf16"}}) {
    std::vector<std::string> args = {
        "ppl", "--ids", PSmall() + "/heldout_ids.json", "--ctx", "64", "--json", "--quiet"};
    args.insert(args.end(), model.begin(), model.end());
    const auto r = Detverify(args);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["windows"], 8);
    EXPECT_EQ(j["scored_tokens"], 8 * 63);
    // A random model with 512 tokens: close to uniform.
    EXPECT_GT(j["perplexity"].get<double>(), 400.0);
    EXPECT_LT(j["perplexity"].get<double>(), 600.0);
  }
}

TEST(FidelityCli, BadInputsAreOneLineAndExitTwo) {
  ScratchDir s("fidelity-cli");
  fleet_testing::WriteFile(s.File("short.json"), "[[1, 2, 3]]");
  const std::string art = PSmall() + "/detllm_artifact", hf = PSmall() + "/hf";
  const std::string held = PSmall() + "/heldout_ids.json";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"compare", "--artifact", art, "--hf", hf}, "give --text FILE or --ids FILE"},
      {{"compare", "--artifact", art, "--hf", s.File("none"), "--ids", held}, "none"},
      {{"compare", "--artifact", s.File("none"), "--hf", hf, "--ids", held}, "none"},
      {{"compare", "--artifact", art, "--hf", hf, "--ids", held, "--dtype", "fp8"}, "fp8"},
      {{"ppl", "--artifact", art, "--ids", s.File("short.json"), "--ctx", "8"},
       "short.json: the text has 3 tokens, fewer than one window of --ctx 8"},
      {{"ppl", "--artifact", art, "--ids", held, "--ctx", "4096"},
       "--ctx 4096 exceeds the model's 256 positions"},
      {{"ppl", "--artifact", art, "--ids", held, "--ctx", "64", "--stride", "65"},
       "--stride must not exceed --ctx"},
      {{"ppl", "--ids", held}, "give --artifact DIR, --hf DIR or --gguf FILE"},
      {{"compare", "--artifact", art, "--ids", held}, "give --hf DIR or --gguf FILE (one)"},
  };
  for (const auto& [args, want] : cases) {
    const auto r = Detverify(args);
    EXPECT_EQ(r.code, 2) << want << ": " << r.err;
    EXPECT_NE(LastLine(r.err).find(want), std::string::npos) << r.err;
    EXPECT_EQ(LastLine(r.err).rfind("detverify: ", 0), 0u) << r.err;
  }
}

}  // namespace
}  // namespace dv
