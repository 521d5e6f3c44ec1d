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
#include "gguf/model_cache.h"
#include "tests/support/scratch_files.h"
#include "tests/support/smollm2.h"

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
  // Without a GPU (this machine) the fp16-cuda row says why it did not run: no device, or a
  // build without the float engine on cuda.
  const size_t skip = text.out.find("fp16-cuda-b1: skipped: ");
  ASSERT_NE(skip, std::string::npos) << text.out;
  const std::string why = text.out.substr(skip, text.out.find('\n', skip) - skip);
  EXPECT_TRUE(why.find("no CUDA device here") != std::string::npos ||
              why.find("no float engine on cuda") != std::string::npos)
      << why;

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
  EXPECT_NE(ints.out.find("fp32-cpu-b1: skipped: the scenario names no float model (model.hf or "
                          "model.gguf) for its float rows"),
            std::string::npos)
      << ints.out;
  EXPECT_EQ(ints.out.find("the float contrast engine is not part of this build"),
            std::string::npos);
}

// A GGUF as the float rows' model (model.gguf): the rows run the dequantized file; each plan
// names source gguf and the file's sha256 (sha256sum's); the one-thread row's tokens and final
// logits chain are those of `generate --engine float --gguf` on the same file (a different path
// into the engine: no plan, no child). Float rows alone have no int8 hash to agree on.
TEST_F(FloatColumnE2e, GgufModelRunsTheFloatRows) {
  const std::string gguf = std::string(DV_SOURCE_ROOT) + "/tests/data/gguf/llama_tiny.gguf";
  test_files::WriteFile(
      dir_.File("g.yaml"),
      "name: gguf-float\nmodel: { gguf: '" + gguf +
          "' }\nprompt: { ids: [3, 14, 15, 9, 26, 5, 35, 8] }\ngenerate: { max_new: 6 }\n"
          "co_prompts: { seed: 7, length: [3, 9], vocab: [1, 39] }\n"
          "configurations:\n"
          "  - { name: fp32-cpu-t1,    engine: float, backend: cpu, dtype: fp32, threads: 1 }\n"
          "  - { name: fp32-cpu-b4,    engine: float, backend: cpu, dtype: fp32, batch: { size: 4, "
          "co_prompts: true } }\n"
          "  - { name: fp32-cpu-split, engine: float, backend: cpu, dtype: fp32, split: { prefill: "
          "3 } }\n"
          "  - { name: bf16-cpu-b1,    engine: float, backend: cpu, dtype: bf16 }\n");
  const std::string db = dir_.File("g.db");
  const Result run = Run(dir_.File("g.yaml"), db);
  EXPECT_NE(run.out.find("float     gguf:llama_tiny.gguf  sha256 "), std::string::npos)
      << run.out << run.err;
  EXPECT_NE(run.out.find("  float rows: 4 rows with hashes; "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("no int8 hash"), std::string::npos) << run.out;

  const Result sum = Shell("sha256sum '" + gguf + "'", dir_);
  ASSERT_EQ(sum.code, 0);
  const std::string file_sha256 = sum.out.substr(0, 64);
  const Result gen = Shell(std::string(DETVERIFY_BIN) +
                               " generate --engine float --dtype fp32 --threads 1 --gguf '" + gguf +
                               "' --prompt-ids 3,14,15,9,26,5,35,8 --max-new 6 --json",
                           dir_);
  ASSERT_EQ(gen.code, 0) << gen.err;
  const nlohmann::json direct = nlohmann::json::parse(gen.out);
  EXPECT_EQ(direct["checkpoint"]["sha256"], file_sha256);

  const db::RunStore store = db::RunStore::OpenReadOnly(db);
  int ok = 0;
  for (const db::RunRecord& r :
       store.Runs(store.Scenarios().at(0).id, db::StepLoading::kWithSteps)) {
    ASSERT_EQ(r.status, RunStatus::kOk) << r.configuration;
    ++ok;
    const nlohmann::json plan = nlohmann::json::parse(r.config_json);
    EXPECT_EQ(plan["model"]["source"], "gguf") << r.configuration;
    EXPECT_EQ(plan["model"]["sha256"], file_sha256) << r.configuration;
    EXPECT_EQ(r.artifact.id, file_sha256);
    EXPECT_EQ(r.artifact.source, "gguf:llama_tiny.gguf");
    EXPECT_EQ(r.step0_logits.size(), 4u * 40u) << r.configuration;  // the vocabulary, float32
    if (r.configuration == "fp32-cpu-t1") {
      EXPECT_EQ(r.final_logits_chain.value_or(""),
                direct["rows"][0]["final"]["logits_chain"].get<std::string>());
      ASSERT_EQ(r.steps.size(), 6u);
      for (size_t i = 0; i < r.steps.size(); ++i) {
        EXPECT_EQ(r.steps[i].token_id, direct["rows"][0]["tokens"][i].get<int64_t>()) << i;
      }
    }
  }
  EXPECT_EQ(ok, 4);

  // A GGUF that is not there, and no fallback: one line naming it, exit 2.
  test_files::WriteFile(dir_.File("missing.yaml"),
                        "name: g\nmodel: { gguf: '" + dir_.File("absent.gguf") +
                            "' }\nprompt: { ids: [3, 4] }\ngenerate: { max_new: 2 }\n"
                            "configurations: [ { name: f, engine: float, backend: cpu } ]\n");
  const Result missing = Run(dir_.File("missing.yaml"), dir_.File("m.db"));
  EXPECT_EQ(missing.code, 2) << missing.out << missing.err;
  EXPECT_NE(missing.err.find("the GGUF model '" + dir_.File("absent.gguf") +
                             "' does not exist and the scenario has no fallback"),
            std::string::npos)
      << missing.err;

  // model.prepare of an absent GGUF: with a fallback, the fallback's models run both sides.
  test_files::WriteFile(dir_.File("calib.txt"), "calibration text");
  test_files::WriteFile(dir_.File("fallback.yaml"),
                        "name: g\nmodel: { gguf: '" + dir_.File("absent.gguf") +
                            "', prepare: { calib: '" + dir_.File("calib.txt") +
                            "' }, fallback: synthetic:qwen3-tiny }\nprompt: { ids: [3, 4] "
                            "}\ngenerate: { max_new: 2 }\n"
                            "configurations: [ { name: i, engine: int8 }, { name: f, engine: "
                            "float, backend: cpu } ]\n");
  const Result fallback = Run(dir_.File("fallback.yaml"), dir_.File("fb.db"));
  EXPECT_EQ(fallback.code, 0) << fallback.out << fallback.err;
  EXPECT_NE(fallback.out.find("artifact  synthetic:qwen3-tiny seed=0"), std::string::npos)
      << fallback.out;
}

// A Llama-family int artifact (prepare --gguf: spec detllm-v1-llama, docs/SPEC.md §9) with the
// GGUF it was prepared from as the float rows' model: the int8 rows share one hash across
// backends, batch and split and record the variant's spec; the float rows run the GGUF.
TEST_F(FloatColumnE2e, LlamaArtifactAndItsGgufInOneScenario) {
  const std::string gguf = std::string(DV_SOURCE_ROOT) + "/tests/data/gguf/llama_tiny.gguf";
  const std::string art = dir_.File("llama-int");
  const Result prep = Shell(std::string(DETVERIFY_BIN) + " prepare --gguf '" + gguf + "' --out '" +
                                art + "' --calib-samples 2 --calib-len 32 --quiet",
                            dir_);
  ASSERT_EQ(prep.code, 0) << prep.err;
  EXPECT_TRUE(fs::is_regular_file(art + "/tokenizer.gguf"));
  test_files::WriteFile(
      dir_.File("l.yaml"),
      "name: llama-tiny\nmodel: { artifact: '" + art + "', gguf: '" + gguf +
          "' }\nprompt: { ids: [3, 14, 15, 9, 26, 5, 35, 8] }\n"
          "generate: { max_new: 10, show_text: true }\n"
          "co_prompts: { seed: 7, length: [3, 9], vocab: [1, 39] }\n"
          "configurations:\n"
          "  - { name: int8-ref-b1,    engine: int8, backend: reference }\n"
          "  - { name: int8-cpu-b4,    engine: int8, backend: cpu, batch: { size: 4, co_prompts: "
          "true } }\n"
          "  - { name: int8-cpu-split, engine: int8, backend: cpu, split: { prefill: 3 } }\n"
          "  - { name: fp32-cpu-b1,    engine: float, backend: cpu, dtype: fp32 }\n");
  const std::string db = dir_.File("l.db");
  const Result run = Run(dir_.File("l.yaml"), db);
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("1 unique hash \u2705"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("(spec detllm-v1-llama,"), std::string::npos) << run.out;
  // The toy GGUF's tokenizer cannot decode (it names no pre-tokenizer): said, not fatal.
  EXPECT_NE(run.out.find("generated text: not shown ("), std::string::npos) << run.out;
  const db::RunStore store = db::RunStore::OpenReadOnly(db);
  for (const db::RunRecord& r :
       store.Runs(store.Scenarios().at(0).id, db::StepLoading::kWithoutSteps)) {
    ASSERT_EQ(r.status, RunStatus::kOk) << r.configuration << ": " << r.status_detail;
    const nlohmann::json plan = nlohmann::json::parse(r.config_json);
    if (r.engine == EngineKind::kInt8) {
      EXPECT_EQ(r.spec_version, "detllm-v1-llama") << r.configuration;
      EXPECT_EQ(plan["spec_version"], "detllm-v1-llama") << r.configuration;
    } else {
      EXPECT_EQ(plan["model"]["source"], "gguf");
    }
  }
}

// model.prepare on the installed SmolLM2: the int8 rows run the GGUF prepared with the scenario's
// calibration into the cache -- the bytes of the documented `prepare --gguf` command -- and share
// one hash; show_text prints the text of each distinct token chain, decoded with the GGUF's
// tokenizer. Skipped (naming the path) without the model.
TEST_F(FloatColumnE2e, PreparedSmolLM2ShowsItsText) {
  DV_REQUIRE_SMOLLM2(model);
  const std::string calib = std::string(DV_SOURCE_ROOT) + "/scenarios/texts/kjv-exodus.txt";
  test_files::WriteFile(
      dir_.File("p.yaml"),
      "name: smollm2-tiny-run\nmodel: { gguf: '" + model + "', prepare: { calib: '" + calib +
          "', samples: 2, len: 64 } }\n"
          "prompt: { text: 'What is the capital of France?', chat: true }\n"
          "generate: { max_new: 8, show_text: true }\n"
          "co_prompts: { seed: 3, length: [4, 12], vocab: [100, 49000] }\n"
          "configurations:\n"
          "  - { name: int8-ref-b1, engine: int8, backend: reference }\n"
          "  - { name: int8-cpu-b4, engine: int8, backend: cpu, batch: { size: 4, co_prompts: "
          "true } }\n"
          "  - { name: fp32-cpu-b1, engine: float, backend: cpu, dtype: fp32 }\n");
  const Result run = Run(dir_.File("p.yaml"), dir_.File("p.db"));
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("1 unique hash \u2705"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("generated text: "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("The capital of France is Paris."), std::string::npos) << run.out;

  // The cached artifact is the by-hand command's.
  const std::string art = dir_.File("by-hand");
  const Result prep =
      Shell(std::string(DETVERIFY_BIN) + " prepare --gguf '" + model + "' --calib '" + calib +
                "' --calib-samples 2 --calib-len 64 --json --quiet --out '" + art + "'",
            dir_);
  ASSERT_EQ(prep.code, 0) << prep.err;
  const std::string sha = nlohmann::json::parse(prep.out)["model_safetensors_sha256"];
  const db::RunStore store = db::RunStore::OpenReadOnly(dir_.File("p.db"));
  for (const db::RunRecord& r :
       store.Runs(store.Scenarios().at(0).id, db::StepLoading::kWithoutSteps)) {
    if (r.engine == EngineKind::kInt8) {
      EXPECT_EQ(r.artifact.id, sha) << r.configuration;
      EXPECT_EQ(r.artifact.source, "prepared:" + fs::path(model).filename().string());
    }
  }
}

}  // namespace
}  // namespace dv
