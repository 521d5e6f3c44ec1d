// `detverify prepare` through the binary: DetLLM's p-small artifact byte for byte from its
// statistics, every calibration source (ids, text with the checkpoint's tokenizer, built in),
// --json, the one-line errors and exit code 2 of bad options and inputs, and a crash half-way
// through writing (test-only fault injection) that leaves no output folder.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/reports/fleet_fixtures.h"
#include "tests/tokenizer/synthetic_tokenizer_json.h"

namespace dv {
namespace {

namespace fs = std::filesystem;
using fleet_testing::Detverify;
using fleet_testing::ScratchDir;

std::string PSmall() { return fleet_testing::SourceDir() + "/tests/data/detllm/prepare/p-small"; }

std::string FirstWord(const std::string& s) { return s.substr(0, s.find(' ')); }

// stderr's last line, which for an error is the whole message.
std::string LastLine(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t.substr(t.rfind('\n') == std::string::npos ? 0 : t.rfind('\n') + 1);
}

TEST(PrepareCli, DetllmsStatisticsGiveDetllmsArtifact) {
  ScratchDir s("prepare-cli");
  const auto r = Detverify({"prepare", "--hf", PSmall() + "/hf", "--out", s.File("out"),
                            "--calib-stats", PSmall() + "/calib_stats.safetensors",
                            "--calib-samples", "16", "--calib-len", "64", "--model-id", "p-small"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(FirstWord(r.out), "cd7ac0e1e4d5bd24a3b40ac5b33d928818f7e3ad10931929b144d5bc630ebcc5");
  EXPECT_NE(r.out.find(s.File("out") + "/model.safetensors"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("quantization"), std::string::npos) << r.err;  // progress lines
}

TEST(PrepareCli, CalibrationIdsJsonAndSavedStatistics) {
  ScratchDir s("prepare-cli");
  const auto r = Detverify({"prepare", "--hf", PSmall() + "/hf", "--out", s.File("out"),
                            "--calib-ids", PSmall() + "/calib_ids.json", "--save-calib-stats",
                            s.File("stats.safetensors"), "--json", "--quiet", "--threads", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["artifact"], s.File("out"));
  EXPECT_EQ(j["model_safetensors_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(j["rope_sensitive_entries"], 0);
  EXPECT_TRUE(fs::exists(s.File("stats.safetensors")));
  // The saved statistics give the same artifact.
  const auto again = Detverify({"prepare", "--hf", PSmall() + "/hf", "--out", s.File("again"),
                                "--calib-stats", s.File("stats.safetensors"), "--json", "--quiet"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["model_safetensors_sha256"],
            j["model_safetensors_sha256"]);
  // The config records calib_samples / calib_len from the file's metadata.
  const auto config = nlohmann::json::parse(fleet_testing::ReadFile(s.File("again/config.json")));
  EXPECT_EQ(config["calib_samples"], 16);
  EXPECT_EQ(config["calib_len"], 64);
}

// Text calibration with the checkpoint's own tokenizer.json (a byte-level one whose ids fit
// p-small's vocabulary of 512), which is copied into the artifact.
TEST(PrepareCli, TextCalibrationWithTheCheckpointsTokenizer) {
  ScratchDir s("prepare-cli");
  fs::copy(PSmall() + "/hf", s.File("hf"));
  fleet_testing::WriteFile(
      s.File("hf/tokenizer.json"),
      tok::testing::SyntheticTokenizerJson({}, nlohmann::json::array()).dump());
  std::string text;
  for (int i = 0; i < 40; ++i) text += "Shall I compare thee to a summer's day? ";
  fleet_testing::WriteFile(s.File("calib.txt"), text);
  const auto r = Detverify({"prepare", "--hf", s.File("hf"), "--out", s.File("out"), "--calib",
                            s.File("calib.txt"), "--calib-samples", "4", "--calib-len", "100"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("tokenizing"), std::string::npos) << r.err;
  EXPECT_EQ(fleet_testing::ReadFile(s.File("out/tokenizer.json")),
            fleet_testing::ReadFile(s.File("hf/tokenizer.json")));
  const auto config = nlohmann::json::parse(fleet_testing::ReadFile(s.File("out/config.json")));
  EXPECT_EQ(config["prepare"]["calibration"]["kind"], "text");
  EXPECT_EQ(config["prepare"]["calibration"]["source"], "calib.txt");
  // Too short a text for the samples asked.
  const auto shorter = Detverify(
      {"prepare", "--hf", s.File("hf"), "--out", s.File("out2"), "--calib", s.File("calib.txt")});
  EXPECT_EQ(shorter.code, 2);
  EXPECT_NE(LastLine(shorter.err)
                .find("calib.txt: gives 1600 tokens; --calib-samples 48 x "
                      "--calib-len 1024 needs 49152"),
            std::string::npos)
      << shorter.err;
  EXPECT_FALSE(fs::exists(s.File("out2")));
}

TEST(PrepareCli, BuiltinCalibrationWarns) {
  ScratchDir s("prepare-cli");
  const auto r =
      Detverify({"prepare", "--hf", PSmall() + "/hf", "--out", s.File("out"), "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: no --calib or --calib-ids given"), std::string::npos) << r.err;
}

TEST(PrepareCli, BadInputsAreOneLineAndExitTwo) {
  ScratchDir s("prepare-cli");
  fleet_testing::WriteFile(s.File("ids.json"), "[[1, 2, 900]]");
  fs::create_directories(s.File("exists"));
  const std::string hf = PSmall() + "/hf";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--hf", s.File("nope"), "--out", s.File("o")}, "nope"},
      {{"--hf", hf, "--out", s.File("o"), "--calib-ids", s.File("ids.json")},
       "token id 900 (sequence 0, position 2) is outside the checkpoint's vocabulary [0, 512)"},
      {{"--hf", hf, "--out", s.File("o"), "--calib-ids", s.File("ids.json"), "--calib-stats",
        PSmall() + "/calib_stats.safetensors"},
       "excludes"},
      {{"--hf", hf, "--out", s.File("o"), "--kv-margin", "0"}, "--kv-margin must be > 0"},
      {{"--hf", hf, "--out", s.File("o"), "--qk-alpha", "1.5"}, "--qk-alpha must lie in [0, 1]"},
      {{"--hf", hf, "--out", s.File("exists")}, "exists (pass --force to replace it)"},
      {{"--hf", hf, "--out", hf, "--force"}, "is (or holds) the checkpoint"},
      {{"--hf", hf, "--out", s.File("o"), "--calib-stats", PSmall() + "/calib_ids.json"},
       "calib_ids.json"},
      {{"--hf", hf, "--out", s.File("o"), "--calib", s.File("absent.txt")}, "absent.txt"},
  };
  for (const auto& [args, want] : cases) {
    std::vector<std::string> full = {"prepare"};
    full.insert(full.end(), args.begin(), args.end());
    const auto r = Detverify(full);
    EXPECT_EQ(r.code, 2) << want << ": " << r.err;
    EXPECT_NE(LastLine(r.err).find(want), std::string::npos) << r.err;
    EXPECT_EQ(LastLine(r.err).rfind("detverify: ", 0), 0u) << r.err;
    EXPECT_FALSE(fs::exists(s.File("o"))) << want;
  }
  EXPECT_TRUE(fs::exists(hf + "/model.safetensors"));
}

// Killed half-way through writing the folder: no output folder, only a hidden temporary beside
// it, and the next run writes the artifact.
TEST(PrepareCli, ACrashLeavesNoOutputFolder) {
  ScratchDir s("prepare-cli");
  ::setenv("DETVERIFY_FAULT", "crash:prepare", 1);
  const auto crashed = Detverify({"prepare", "--hf", PSmall() + "/hf", "--out", s.File("out"),
                                  "--calib-ids", PSmall() + "/calib_ids.json", "--quiet"});
  ::unsetenv("DETVERIFY_FAULT");
  EXPECT_EQ(crashed.code, -1) << "expected a crash: " << crashed.err;
  EXPECT_FALSE(fs::exists(s.File("out")));
  for (const auto& e : fs::directory_iterator(s.Path())) {
    EXPECT_EQ(e.path().filename().string().rfind(".out.tmp.", 0), 0u) << e.path();
  }
  const auto r = Detverify({"prepare", "--hf", PSmall() + "/hf", "--out", s.File("out"),
                            "--calib-ids", PSmall() + "/calib_ids.json", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(s.File("out/model.safetensors")));
}

}  // namespace
}  // namespace dv
