// The float column end to end through the detverify binary, on the synthetic qwen3-tiny models
// (int artifact and `synth --format hf` checkpoint of the same preset, both from the scenario's
// fallback): float rows run as plans of their own (fp32 batch 1, batch 4 with co-prompts, split
// prefill, one thread, bf16), record their step-0 logits, and show the float column; the int8
// verdict is untouched. The statistics are checked against numpy reading the DB and a
// `generate --dump-logits` .npy (float_cushion_check.py), which skips without numpy. Skip
// reasons: a float row whose checkpoint is missing, an int8 row whose artifact is missing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "db/run_store.h"
#include "tests/support/scratch_files.h"

namespace dv {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
};

Result Shell(const std::string& command, const test_files::ScratchDir& dir) {
  const std::string out = dir.File("cmd.out"), err = dir.File("cmd.err");
  const int raw = std::system((command + " > '" + out + "' 2> '" + err + "' < /dev/null").c_str());
  Result r;
  r.code = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = test_files::ReadFile(out);
  r.err = test_files::ReadFile(err);
  return r;
}

constexpr const char* kPrompt = "11, 48, 85, 122, 159, 196, 233, 270, 307, 344, 381, 418";

std::string Scenario(const std::string& model) {
  return std::string("name: floatcol\nmodel: ") + model + "\nprompt:\n  ids: [" + kPrompt +
         "]\ngenerate: { max_new: 12 }\n"
         "co_prompts: { seed: 1234, length: [5, 20], vocab: [100, 1000] }\n"
         "configurations:\n"
         "  - { name: int8-ref-b1,    engine: int8, backend: reference }\n"
         "  - { name: int8-cpu-b4,    engine: int8, backend: cpu, batch: { size: 4, co_prompts: "
         "true } }\n"
         "  - { name: fp32-cpu-b1,    engine: float, backend: cpu, dtype: fp32, threads: 2 }\n"
         "  - { name: fp32-cpu-b4,    engine: float, backend: cpu, dtype: fp32, batch: { size: 4, "
         "co_prompts: true } }\n"
         "  - { name: fp32-cpu-split, engine: float, backend: cpu, dtype: fp32, split: { prefill: "
         "5 } }\n"
         "  - { name: fp32-cpu-t1,    engine: float, backend: cpu, dtype: fp32, threads: 1 }\n"
         "  - { name: bf16-cpu-b1,    engine: float, backend: cpu, dtype: bf16 }\n"
         "  - { name: fp16-cuda-b1,   engine: float, backend: cuda, dtype: fp16 }\n";
}

class FloatColumnE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    // The synthetic models come from the cache (DETVERIFY_CACHE, else the user's).
    test_files::WriteFile(dir_.File("s.yaml"), Scenario("{ fallback: synthetic:qwen3-tiny }"));
  }
  Result Run(const std::string& scenario, const std::string& db, const std::string& extra = "") {
    return Shell(std::string(DETVERIFY_BIN) + " run '" + scenario + "' --db '" + db + "' " + extra,
                 dir_);
  }
  test_files::ScratchDir dir_{"floate2e"};
};

TEST_F(FloatColumnE2e, FloatRowsRunAndShowTheirColumn) {
  const std::string db = dir_.File("r.db");
  const Result text = Run(dir_.File("s.yaml"), db);
  ASSERT_EQ(text.code, 0) << text.out << text.err;
  EXPECT_NE(text.out.find("float     synthetic-hf:qwen3-tiny seed=0  sha256 "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("1 unique hash \u2705"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("unique hash"), std::string::npos);
  EXPECT_NE(text.out.find("  float rows: 5 rows with hashes; "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  step-0 cushion: max |\u0394logit| "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("fp16-cuda-b1: skipped: this build's float engine runs on the cpu"),
            std::string::npos)
      << text.out;

  const std::string json_db = dir_.File("j.db");
  const Result json = Run(dir_.File("s.yaml"), json_db, "--json");
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json table = nlohmann::json::parse(json.out);
  EXPECT_EQ(table["verdict"]["int8_agree"], true);
  EXPECT_EQ(table["verdict"]["float_runs"], 5);
  EXPECT_EQ(table["verdict"]["float"]["rows_with_step0_logits"], 5);
  EXPECT_FALSE(table["verdict"]["float"]["cushion"].is_null());
  // Nothing asserts the float rows differ or agree: both are legal outcomes, only reported.
  const int64_t unique = table["verdict"]["float_unique_logits_hashes"];
  EXPECT_GE(unique, 1);
  EXPECT_LE(unique, 5);

  // Every float row records its plan: an hf model, its checkpoint's digest, its dtype, threads.
  const db::RunStore store = db::RunStore::OpenReadOnly(json_db);
  for (const db::RunRecord& run :
       store.Runs(store.Scenarios().at(0).id, db::StepLoading::kWithSteps)) {
    if (run.engine != EngineKind::kFloat || run.status != RunStatus::kOk) continue;
    const nlohmann::json plan = nlohmann::json::parse(run.config_json);
    EXPECT_EQ(plan["model"]["source"], "hf") << run.configuration;
    EXPECT_EQ(plan["model"]["sha256"], run.artifact.id);
    EXPECT_EQ(run.artifact.source, "synthetic-hf:qwen3-tiny seed=0");
    EXPECT_EQ(run.step0_logits.size() % 4, 0u);
    EXPECT_FALSE(run.step0_logits.empty()) << run.configuration;
    if (run.configuration == "fp32-cpu-t1") {
      EXPECT_EQ(plan["threads"], 1);
    }
    if (run.configuration == "bf16-cpu-b1") {
      EXPECT_EQ(plan["dtype"], "bf16");
    }
  }

  // numpy, from the DB's blobs and a dump of the fp32 batch-1 path.
  if (Shell("python3 -c 'import numpy'", dir_).code != 0) GTEST_SKIP() << "no numpy";
  const std::string npy = dir_.File("b1.npy");
  const std::string ids(kPrompt);
  std::string compact;
  for (char c : ids) {
    if (c != ' ') compact += c;
  }
  const Result gen = Shell(std::string(DETVERIFY_BIN) +
                               " generate --engine float --dtype fp32 --preset qwen3-tiny "
                               "--threads 2 --max-new 12 --prompt-ids " +
                               compact + " --dump-logits '" + npy + "'",
                           dir_);
  ASSERT_EQ(gen.code, 0) << gen.err;
  test_files::WriteFile(dir_.File("table.json"), json.out);
  const Result check =
      Shell("python3 '" + std::string(DV_SOURCE_ROOT) + "/tests/harness/float_cushion_check.py' '" +
                json_db + "' '" + dir_.File("table.json") + "' '" + npy + "'",
            dir_);
  EXPECT_EQ(check.code, 0) << check.out << check.err;
}

TEST_F(FloatColumnE2e, RowsWhoseModelIsMissingAreSkippedWithTheReason) {
  test_files::WriteFile(dir_.File("m.yaml"),
                        Scenario("{ artifact: " + dir_.File("no-artifact") +
                                 ", hf: " + dir_.File("no-checkpoint") + " }"));
  // Neither model exists and there is no fallback: nothing can run, one line, exit 2.
  const Result none = Run(dir_.File("m.yaml"), dir_.File("m.db"));
  EXPECT_EQ(none.code, 2) << none.out << none.err;
  EXPECT_NE(none.err.find("does not exist and the scenario has no fallback"), std::string::npos)
      << none.err;

  // A real checkpoint, no int artifact: the int8 rows are skipped, the float rows run.
  const Result synth =
      Shell(std::string(DETVERIFY_BIN) + " synth --preset qwen3-tiny --format hf --out '" +
                dir_.File("ckpt") + "'",
            dir_);
  ASSERT_EQ(synth.code, 0) << synth.err;
  test_files::WriteFile(dir_.File("f.yaml"), Scenario("{ artifact: " + dir_.File("no-artifact") +
                                                      ", hf: " + dir_.File("ckpt") + " }"));
  const Result floats = Run(dir_.File("f.yaml"), dir_.File("f.db"),
                            "--config int8-ref-b1 "
                            "--config fp32-cpu-b1");
  EXPECT_EQ(floats.code, 0) << floats.out << floats.err;
  EXPECT_NE(floats.out.find("int8-ref-b1: skipped: the int artifact '" + dir_.File("no-artifact") +
                            "' does not exist and the scenario has no fallback"),
            std::string::npos)
      << floats.out;
  EXPECT_NE(floats.out.find("float     hf:ckpt  sha256 "), std::string::npos) << floats.out;
  EXPECT_NE(floats.out.find("no int8 hash"), std::string::npos) << floats.out;

  // An int artifact and no checkpoint named (no fallback): the float rows say so.
  test_files::WriteFile(dir_.File("n.yaml"), Scenario("{ artifact: " + dir_.File("int") + " }"));
  const Result art = Shell(
      std::string(DETVERIFY_BIN) + " synth --preset qwen3-tiny --out '" + dir_.File("int") + "'",
      dir_);
  ASSERT_EQ(art.code, 0) << art.err;
  const Result ints =
      Run(dir_.File("n.yaml"), dir_.File("n.db"), "--config int8-ref-b1 --config fp32-cpu-b1");
  EXPECT_EQ(ints.code, 0) << ints.out << ints.err;
  EXPECT_NE(ints.out.find("fp32-cpu-b1: skipped: the scenario names no Hugging Face checkpoint "
                          "(model.hf) for its float rows"),
            std::string::npos)
      << ints.out;
  EXPECT_EQ(ints.out.find("the float contrast engine is not part of this build"),
            std::string::npos);
}

}  // namespace
}  // namespace dv
