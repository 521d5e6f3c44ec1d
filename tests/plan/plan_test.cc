// Run plans: the canonical JSON round-trips and is refused when it is not one this build reads;
// the child executes a plan exactly (its chains equal a direct run of the same batch) and refuses
// a model whose SHA-256 is not the plan's; a result that does not answer its plan is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/file_io.h"
#include "base/sha256.h"
#include "build_info.h"
#include "engine/backends/backend_registry.h"
#include "engine/co_prompts.h"
#include "engine/generate.h"
#include "engine/model_source.h"
#include "engine/synth.h"
#include "plan/plan_executor.h"
#include "plan/plan_result.h"
#include "plan/run_plan.h"
#include "tests/support/scratch_files.h"

namespace dv::plan {
namespace {

RunPlan TinyPlan(const Artifact& artifact) {
  RunPlan p;
  p.scenario_name = "quick";
  p.scenario_id = std::string(64, 'a');
  p.name = "int8-cpu-b3";
  p.engine = EngineKind::kInt8;
  p.backend = BackendKind::kCpu;
  const ResolvedBackend resolved = ResolveBackend(BackendKind::kCpu, {2, ""});
  p.isa = resolved.isa;
  p.threads = resolved.threads;
  p.model.source = ModelSource::kSynthetic;
  p.model.preset = "qwen3-tiny";
  p.model.seed = 0;
  p.model.sha256 = artifact.sha256();
  p.model.config_sha256 = artifact.config_sha256();
  p.model.label = "synthetic:qwen3-tiny seed=0";
  p.model.synthetic = true;
  p.prompt.ids = {1, 2, 3, 4, 5, 6, 7, 8};
  p.batch.size = 3;
  p.batch.position = 1;
  p.batch.co_prompts = true;
  CoPromptSpec spec;
  spec.count = 2;
  p.batch.co_prompt_ids = MakeCoPrompts(spec, artifact.weights().config.vocab);
  p.split_prefill = 3;
  p.max_new = 6;
  p.timeout_s = 60;
  p.spec_version = build::kSpecVersion;
  return p;
}

class PlanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { artifact_ = LoadSynthetic("qwen3-tiny", 0).release(); }
  static void TearDownTestSuite() { delete artifact_; }
  static const Artifact* artifact_;
};
const Artifact* PlanTest::artifact_ = nullptr;

TEST_F(PlanTest, CanonicalTextRoundTrips) {
  const RunPlan p = TinyPlan(*artifact_);
  const std::string text = CanonicalPlanText(p);
  EXPECT_EQ(CanonicalPlanText(ParsePlan(text, "plan.json")), text);
  const nlohmann::json j = nlohmann::json::parse(text);
  // The keys earlier configuration JSON had keep their meaning (reports read batch.size and
  // split_prefill to find the batch-1 row).
  EXPECT_EQ(j["name"], "int8-cpu-b3");
  EXPECT_EQ(j["batch"]["size"], 3);
  EXPECT_EQ(j["split_prefill"], 3);
  EXPECT_EQ(j["engine"], "int8");
  EXPECT_FALSE(j.contains("dtype")) << "dtype only on float plans";
  EXPECT_FALSE(j.contains("platform")) << "platform only on emulated plans";
  RunPlan f = p;
  f.engine = EngineKind::kFloat;
  f.dtype = FloatDType::kBf16;
  f.model.source = ModelSource::kHfCheckpoint;
  f.model.path = "/models/Qwen3-0.6B";
  f.platform = "aarch64";
  const RunPlan back = ParsePlan(CanonicalPlanText(f), "float.json");
  EXPECT_EQ(back.dtype, FloatDType::kBf16);
  EXPECT_EQ(back.model.source, ModelSource::kHfCheckpoint);
  EXPECT_EQ(back.platform, "aarch64");
}

TEST_F(PlanTest, RefusesWhatThisBuildDoesNotRead) {
  const nlohmann::json good = PlanJson(TinyPlan(*artifact_));
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& j) { j["plan_version"] = 2; },
       "plan_version 2, this build reads version 1"},
      {[](nlohmann::json& j) { j["temperature"] = 0; }, "unknown key temperature"},
      {[](nlohmann::json& j) { j["model"]["url"] = "x"; }, "unknown key model.url"},
      {[](nlohmann::json& j) { j.erase("max_new"); }, "missing key max_new"},
      {[](nlohmann::json& j) { j["backend"] = "tpu"; },
       "backend 'tpu' is not one of reference, cpu, cuda"},
      {[](nlohmann::json& j) { j["threads"] = 0; }, "threads = 0 is outside [1, 4096]"},
      {[](nlohmann::json& j) { j["batch"]["position"] = 3; },
       "batch.position = 3 is outside [0, 2]"},
      {[](nlohmann::json& j) { j["batch"]["co_prompt_ids"] = nlohmann::json::array(); },
       "batch.co_prompt_ids has 0 rows for a batch of 3"},
      {[](nlohmann::json& j) {
         j["prompt"]["ids"] = {1, -2};
       },
       "prompt.ids holds a value that is not a token id"},
      {[](nlohmann::json& j) { j["dtype"] = "fp32"; }, "dtype applies to engine float"},
      {[](nlohmann::json& j) { j["model"]["preset"] = ""; }, "model names no preset"},
  };
  for (const auto& [edit, message] : cases) {
    nlohmann::json j = good;
    edit(j);
    try {
      ParsePlan(j.dump(), "p.json");
      ADD_FAILURE() << "accepted: " << message;
    } catch (const PlanError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("p.json: run plan: ", 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(ParsePlan("{", "p.json"), PlanError);
}

// What the child computes is what the same batch gives when run directly.
TEST_F(PlanTest, ExecutesExactlyThePlan) {
  const RunPlan p = TinyPlan(*artifact_);
  int64_t last = 0;
  const PlanResult r = ExecutePlan(p, "x", [&](int64_t done, int64_t total) {
    EXPECT_EQ(total, 6);
    last = done;
  });
  EXPECT_EQ(last, 6);
  EXPECT_EQ(r.model_sha256, artifact_->sha256());
  EXPECT_EQ(r.isa, p.isa);
  EXPECT_EQ(r.threads, 2);
  EXPECT_TRUE(r.fingerprint.is_object());
  auto backend = MakeBackend(BackendKind::kReference);
  IntQwen3 model(artifact_->weights(), *backend);
  GenerationOptions go;
  go.max_new = 6;
  go.split = 3;
  const auto rows = ComposeBatch(p.prompt.ids, p.batch.co_prompt_ids, p.batch.position);
  const RowResult direct = GenerateGreedy(model, rows, go)[1];
  ASSERT_EQ(r.steps.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.steps[i].token, direct.tokens[i]);
    EXPECT_EQ(r.steps[i].logits_chain, direct.logits_chain[i]);
    EXPECT_EQ(r.steps[i].token_chain, direct.token_chain[i]);
  }
}

// The child checks the model against the plan before it runs anything.
TEST_F(PlanTest, RefusesAModelThatIsNotThePlans) {
  test_files::ScratchDir dir("plan");
  const std::string folder = dir.File("artifact");
  WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 0, folder);
  RunPlan p = TinyPlan(*artifact_);
  p.model.source = ModelSource::kArtifact;
  p.model.path = folder;
  p.model.synthetic = false;
  EXPECT_NO_THROW(ExecutePlan(p, "x", nullptr));
  // Another artifact put in its place after the run was planned.
  WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 1, folder);
  try {
    ExecutePlan(p, "x", nullptr);
    FAIL() << "ran a model that is not the plan's";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors has sha256"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("the run plan names " + artifact_->sha256().substr(0, 16)),
              std::string::npos)
        << e.what();
  }
  p.engine = EngineKind::kFloat;
  EXPECT_THROW(ExecutePlan(p, "x", nullptr), PlanError);
  p = TinyPlan(*artifact_);
  p.spec_version = "detllm-v0";
  EXPECT_THROW(ExecutePlan(p, "x", nullptr), PlanError);
}

// The child end to end: plan file in, result file out, and the parent's check of it.
TEST_F(PlanTest, ChildWritesAResultThatAnswersItsPlan) {
  test_files::ScratchDir dir("plan");
  const RunPlan p = TinyPlan(*artifact_);
  const std::string text = CanonicalPlanText(p);
  WriteFileAtomic(dir.File("plan.json"), text);
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(RunPlanChild(dir.File("plan.json"), dir.File("result.json")), 0);
  const std::string progress = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(progress.find("progress 6 6\n"), std::string::npos) << progress;
  const std::string result = ReadFileBounded(dir.File("result.json"), kMiB);
  const PlanResult r = ParseResult(result, p, Sha256Hex(text));
  EXPECT_EQ(r.steps.size(), 6u);

  // Results that do not answer the plan.
  EXPECT_THROW(ParseResult(result, p, Sha256Hex("another plan")), ResultError);
  RunPlan longer = p;
  longer.max_new = 7;
  EXPECT_THROW(ParseResult(result, longer, Sha256Hex(text)), ResultError);
  RunPlan other_model = p;
  other_model.model.sha256 = std::string(64, '0');
  EXPECT_THROW(ParseResult(result, other_model, Sha256Hex(text)), ResultError);
  nlohmann::json tampered = nlohmann::json::parse(result);
  tampered["steps"][2][1] = "ABC";
  EXPECT_THROW(ParseResult(tampered.dump(), p, Sha256Hex(text)), ResultError);
  EXPECT_THROW(ParseResult("[]", p, Sha256Hex(text)), ResultError);

  // A plan file that is not a regular file is refused at once.
  ASSERT_EQ(::mkfifo(dir.File("fifo.json").c_str(), 0600), 0);
  EXPECT_THROW(RunPlanChild(dir.File("fifo.json"), dir.File("r2.json")), PlanError);
}

}  // namespace
}  // namespace dv::plan
