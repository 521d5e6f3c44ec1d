// End to end through the detverify binary: quick.yaml gives one unique int8 hash with one steps
// row per generated step; crashed and hung configurations are recorded while the others finish;
// a run killed with SIGKILL leaves only complete runs; two runs write one DB at once; bad input
// gives one line and exit code 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "db/run_store.h"

namespace dv {
namespace {

namespace fs = std::filesystem;

std::string Src() {
  return std::getenv("DETVERIFY_SOURCE_DIR") ? std::getenv("DETVERIFY_SOURCE_DIR") : ".";
}

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs detverify with `args` (and extra environment "K=V" entries), capturing output.
Result Detverify(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  const fs::path dir = fs::temp_directory_path();
  const std::string out = (dir / ("dv_e2e_out_" + std::to_string(::getpid()))).string();
  const std::string err = out + ".err";
  std::string cmd;
  for (const auto& e : env) cmd += e + " ";
  cmd += std::string(DETVERIFY_BIN);
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " > " + out + " 2> " + err + " < /dev/null";
  const int raw = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::stringstream so, se;
  so << std::ifstream(out).rdbuf();
  se << std::ifstream(err).rdbuf();
  r.out = so.str();
  r.err = se.str();
  fs::remove(out);
  fs::remove(err);
  return r;
}

pid_t Spawn(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    std::vector<char*> argv;
    std::string bin = DETVERIFY_BIN;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(DETVERIFY_BIN, argv.data());
    ::_exit(127);
  }
  return pid;
}

class E2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dv_e2e_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "results.db").string();
    // quick.yaml with a 120 s timeout per configuration, so a hung child cannot stall the suite.
    std::stringstream text;
    text << std::ifstream(Src() + "/scenarios/quick.yaml").rdbuf();
    quick_ = (dir_ / "quick.yaml").string();
    std::ofstream(quick_) << text.str() << "timeout_s: 120\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Every run in the DB has exactly n_steps steps, numbered 0..n-1, and its final hashes.
  void ExpectOnlyCompleteRuns() {
    db::RunStore store = db::RunStore::OpenReadOnly(db_);
    for (const auto& s : store.Scenarios()) {
      for (const auto& run : store.Runs(s.id, db::StepLoading::kWithSteps)) {
        ASSERT_EQ(static_cast<int64_t>(run.steps.size()), run.n_steps) << run.configuration;
        for (size_t i = 0; i < run.steps.size(); ++i)
          ASSERT_EQ(run.steps[i].step, static_cast<int64_t>(i));
        if (run.n_steps > 0) {
          EXPECT_EQ(run.final_logits_chain, run.steps.back().logits_chain);
        }
      }
    }
  }

  fs::path dir_;
  std::string db_, quick_;
};

TEST_F(E2E, QuickYieldsOneUniqueInt8HashAndOneStepRowPerStep) {
  const Result r = Detverify({"run", quick_, "--db", db_, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GE(j["verdict"]["int8_runs"].get<int>(), 4);
  EXPECT_EQ(j["verdict"]["int8_unique_logits_hashes"].get<int>(), 1);
  EXPECT_EQ(j["verdict"]["int8_unique_token_hashes"].get<int>(), 1);
  db::RunStore store = db::RunStore::OpenReadOnly(db_);
  ASSERT_EQ(store.Scenarios().size(), 1u);
  int ok_runs = 0;
  for (const auto& run : store.Runs(store.Scenarios()[0].id, db::StepLoading::kWithSteps)) {
    if (run.status == RunStatus::kSkipped) {
      EXPECT_TRUE(run.steps.empty());
      continue;
    }
    ASSERT_EQ(run.status, RunStatus::kOk) << run.configuration;
    ++ok_runs;
    EXPECT_EQ(run.steps.size(), 32u) << run.configuration;
  }
  EXPECT_GE(ok_runs, 4);
}

// The prepared fallback (the synthetic float checkpoint prepared with the built-in calibration):
// every int8 row runs that artifact, loaded by each child from the cache folder the parent
// prepared, and they agree.
TEST_F(E2E, PreparedFallbackRunsThePreparedArtifact) {
  std::stringstream text;
  text << std::ifstream(quick_).rdbuf();
  std::string yaml = text.str();
  yaml.replace(yaml.find("synthetic:qwen3-tiny"), 20, "prepared:qwen3-tiny");
  const std::string scenario = (dir_ / "prepared.yaml").string();
  std::ofstream(scenario) << yaml;
  const Result r = Detverify({"run", scenario, "--db", db_, "--json", "--config", "int8-ref-b1",
                              "--config", "int8-cpu-b8", "--config", "int8-ref-split"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"]["int8_runs"].get<int>(), 3);
  EXPECT_EQ(j["verdict"]["int8_unique_logits_hashes"].get<int>(), 1);
  EXPECT_NE(r.err.find("SYNTHETIC MODEL"), std::string::npos) << r.err;
  db::RunStore store = db::RunStore::OpenReadOnly(db_);
  ASSERT_EQ(store.Scenarios().size(), 1u);
  for (const auto& run : store.Runs(store.Scenarios()[0].id, db::StepLoading::kWithSteps)) {
    EXPECT_EQ(run.status, RunStatus::kOk) << run.configuration;
    // tests/prepare/prepared_synthetic_test.cc pins these bytes.
    EXPECT_EQ(run.artifact.id, "d9b6b5228f8679aeb1598bd3364a7078dfbc0285ba24b30a199797d17f4ec8bd")
        << run.configuration;
    EXPECT_EQ(run.artifact.source, "prepared:qwen3-tiny seed=0");
    EXPECT_TRUE(run.artifact.synthetic);
  }
}

// Every row records the plan its child ran (runs.config_json): the model's SHA-256, the prompt's
// ids, the co-prompts' ids, the backend's level and thread count, as the parent resolved them.
TEST_F(E2E, EveryRowRecordsThePlanItRan) {
  const Result r = Detverify({"run", quick_, "--db", db_, "--config", "int8-cpu-b8", "--config",
                              "int8-ref-b1", "--config", "int8-cuda-b1"});
  ASSERT_EQ(r.code, 0) << r.err;
  db::RunStore store = db::RunStore::OpenReadOnly(db_);
  const auto runs = store.Runs(store.Scenarios()[0].id);
  ASSERT_EQ(runs.size(), 3u);
  for (const auto& run : runs) {
    const auto plan = nlohmann::json::parse(run.config_json);
    EXPECT_EQ(plan["plan_version"], 1) << run.configuration;
    EXPECT_EQ(plan["name"], run.configuration);
    EXPECT_EQ(plan["model"]["sha256"], run.artifact.id);
    EXPECT_EQ(plan["model"]["config_sha256"], run.artifact.config_sha256);
    EXPECT_EQ(plan["scenario"]["id"], run.scenario.id);
    EXPECT_FALSE(plan["prompt"]["ids"].empty());
    EXPECT_EQ(plan["batch"]["co_prompt_ids"].size(), plan["batch"]["size"].get<size_t>() - 1);
    EXPECT_EQ(plan["spec_version"], "detllm-v1");
    if (run.configuration == "int8-cpu-b8") {
      EXPECT_EQ(plan["batch"]["size"], 8);
      EXPECT_FALSE(plan["isa"].get<std::string>().empty()) << "the cpu backend's level";
      EXPECT_GE(plan["threads"].get<int>(), 1);
    } else if (run.configuration == "int8-ref-b1") {
      EXPECT_EQ(plan["isa"], "");
      EXPECT_EQ(plan["threads"], 1);
    } else {
      EXPECT_EQ(run.status, RunStatus::kSkipped) << "a skipped row records its plan too";
    }
  }
}

TEST_F(E2E, CrashedAndHungConfigurationsAreRecordedOthersComplete) {
  // A copy of quick.yaml with a short timeout so the hang ends quickly.
  std::stringstream text;
  text << std::ifstream(Src() + "/scenarios/quick.yaml").rdbuf();
  const std::string scenario = (dir_ / "quick-short.yaml").string();
  std::ofstream(scenario) << text.str() << "timeout_s: 4\n";
  const Result r =
      Detverify({"run", scenario, "--db", db_, "--config", "int8-ref-b1", "--config", "int8-ref-b4",
                 "--config", "int8-ref-split", "--config", "int8-cuda-b1"},
                {"DETVERIFY_FAULT=crash:int8-ref-b4,hang:int8-ref-split"});
  EXPECT_EQ(r.code, 1) << "the exit code says not everything ran";
  db::RunStore store = db::RunStore::OpenReadOnly(db_);
  std::map<std::string, std::string> status;
  for (const auto& run : store.Runs(store.Scenarios()[0].id))
    status[run.configuration] = std::string(KindName(run.status));
  EXPECT_EQ(status["int8-ref-b1"], "ok");
  EXPECT_EQ(status["int8-ref-b4"], "crashed");
  EXPECT_EQ(status["int8-ref-split"], "timeout");
  EXPECT_EQ(status["int8-cuda-b1"], "skipped");
  EXPECT_NE(r.out.find("crashed"), std::string::npos);
}

TEST_F(E2E, SigkillMidRunLeavesOnlyCompleteRuns) {
  for (int delay_ms : {150, 400, 700, 1100}) {
    const pid_t pid = Spawn({"run", quick_, "--db", db_});
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    // A new DB is created whole or not at all: killed before that, there is no file.
    if (fs::exists(db_)) ExpectOnlyCompleteRuns();
  }
  // A run after the kills completes into whatever they left, and clears their staging files.
  const Result r = Detverify({"run", quick_, "--db", db_});
  ASSERT_EQ(r.code, 0) << r.err;
  ExpectOnlyCompleteRuns();
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".create-"), std::string::npos) << entry.path();
}

TEST_F(E2E, TwoConcurrentRunsIntoOneDb) {
  const pid_t a = Spawn({"run", quick_, "--db", db_});
  const pid_t b = Spawn({"run", quick_, "--db", db_});
  int sa = 0, sb = 0;
  ::waitpid(a, &sa, 0);
  ::waitpid(b, &sb, 0);
  EXPECT_TRUE(WIFEXITED(sa) && WEXITSTATUS(sa) == 0);
  EXPECT_TRUE(WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
  db::RunStore store = db::RunStore::OpenReadOnly(db_);
  std::map<std::string, int> ok_runs;
  for (const auto& run : store.Runs(store.Scenarios()[0].id))
    ok_runs[run.configuration] += run.status == RunStatus::kOk;
  int executed = 0;
  for (const auto& [config, n] : ok_runs) {
    // Skipped rows may coincide; every executed configuration has a complete run from each.
    if (n > 0) {
      EXPECT_EQ(n, 2) << config;
      ++executed;
    }
  }
  EXPECT_GE(executed, 4);
  ExpectOnlyCompleteRuns();
}

TEST_F(E2E, BadInputGivesOneLineAndExitTwo) {
  const std::string bad = (dir_ / "bad.yaml").string();
  std::ofstream(bad)
      << "name: x\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
         "max_new: 1 }\nconfigurations: [ { name: a, engine: int8, backend: gpu } ]\n";
  Result r = Detverify({"run", "--validate", bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "detverify: " + bad +
                       ":5: a.backend must be one of cpu | cuda | reference, got 'gpu'\n");

  r = Detverify({"run", "--validate", quick_});
  EXPECT_EQ(r.code, 0) << r.err;

  r = Detverify({"run", quick_, "--db", db_, "--config", "nope"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown configuration 'nope'"), std::string::npos) << r.err;

  const std::string corrupt = (dir_ / "corrupt.db").string();
  std::ofstream(corrupt)
      << "this is not a database, just text that is long enough to look like a header.....";
  const auto before = fs::file_size(corrupt);
  r = Detverify({"run", quick_, "--db", corrupt});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(corrupt), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(fs::file_size(corrupt), before);
}

}  // namespace
}  // namespace dv

namespace dv {
namespace {

// The demo's prompt: the bundled tokenizer (xz) and the default one give the 64 ids demo.yaml
// states in prompt.expect_ids, which are the ids the issue text and DetLLM's demo use.
TEST(TokenizeCli, SonnetGivesTheDemoIdsWithTheBundledTokenizer) {
  const std::string sonnet = Src() + "/scenarios/texts/sonnet18.txt";
  const std::string expected_prefix =
      "2016,541,358,9429,39244,311,264,7324,594,1899,5267,1001,283,1947,803,16690,323,803,6797,349,"
      "510,49,1384,28492,653,26025,279,75645,67443,315,3217,345,3036,7324,594,25064,51577,678,2238,"
      "2805,264,2400,280,49882,4107,2238,4017,279,7912,315,22274,64780,345,3036,3545,374,806,6623,"
      "90579,5103,76,4172,280,3036,";
  const Result bundled =
      Detverify({"tokenize", "--file", sonnet},
                {"DETVERIFY_TOKENIZER=" + Src() + "/tokenizer/data/qwen3-tokenizer.json.xz"});
  ASSERT_EQ(bundled.code, 0) << bundled.err;
  EXPECT_EQ(bundled.out.rfind(expected_prefix, 0), 0u) << bundled.out;
}

TEST(TokenizeCli, JsonlKeepsOrderAndDecodeRoundTrips) {
  const std::string in =
      (fs::temp_directory_path() / ("dv_tok_" + std::to_string(::getpid()) + ".jsonl")).string();
  std::ofstream(in) << "\"Hello <think> world\"\n\"\"\n\"\\u65e5\\u672c\\u8a9e\"\n";
  const std::vector<std::string> env = {"DETVERIFY_TOKENIZER=" + Src() +
                                        "/tokenizer/data/qwen3-tokenizer.json.xz"};
  const Result r = Detverify({"tokenize", "--jsonl", in}, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "[9707,220,151667,1879]\n[]\n[101059,102819]\n");
  const Result d = Detverify({"tokenize", "--ids", "9707,220,151667,1879"}, env);
  EXPECT_EQ(d.out, "Hello <think> world\n");
  std::ofstream(in) << "not json\n";
  const Result bad = Detverify({"tokenize", "--jsonl", in}, env);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "detverify: " + in + ":1: not a JSON string\n");
  fs::remove(in);
}

}  // namespace
}  // namespace dv
