// Content-addressed ids and record validation (db/content_ids.h, db/records.h).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "db/run_store.h"
#include "tests/db/test_fixtures.h"

namespace dv::db {
namespace {

using testing::MakeRun;

std::string Repeat(char c) { return std::string(64, c); }

// A run small enough to spell its canonical JSON out by hand.
RunRecord TinyRun() {
  RunRecord run;
  run.scenario = ScenarioRecord{"", "tiny", "name: tiny\n"};
  run.machine = MachineRecord{"", R"({"cpu":"test"})"};
  run.artifact = ArtifactRecord{Repeat('a'), "synthetic:qwen3-tiny seed=0", true, Repeat('c')};
  run.configuration = "int8-cpu-b1";
  run.engine = EngineKind::kInt8;
  run.backend = BackendKind::kCpu;
  run.status = RunStatus::kOk;
  run.started_at = "2025-01-31T12:00:00Z";
  run.wall_ms = 1500;
  run.tokens_per_s_milli = 42000;
  run.n_steps = 2;
  run.steps = {StepRecord{0, 11, Repeat('1'), Repeat('2')},
               StepRecord{1, 22, Repeat('3'), Repeat('4')}};
  run.final_logits_chain = Repeat('3');
  run.final_token_chain = Repeat('4');
  run.tool_version = "0.1.0";
  run.spec_version = "detllm-v1";
  run.config_json = R"({"batch":1})";
  return run;
}

TEST(DbContentIds, Sha256MatchesTheStandardVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(DbContentIds, CanonicalRunJsonIsSortedCompactAndComplete) {
  const std::string expected =
      R"({"artifact_id":")" + Repeat('a') +
      R"(","backend":"cpu","config_json":"{\"batch\":1}","configuration":"int8-cpu-b1",)"
      R"("engine":"int8","final_logits_chain":")" +
      Repeat('3') + R"(","final_token_chain":")" + Repeat('4') +
      R"(","machine_id":"f58c309b053ab0a8d01a5c27be5e73764bec9af71d69d8c6a98e98504684d95b",)"
      R"("n_steps":2,)"
      R"("scenario_id":"738f3d001935a878f5eafb18f616795e3f8241c0bf0d19384f2b82cf4d9f01b2",)"
      R"("spec_version":"detllm-v1","started_at":"2025-01-31T12:00:00Z","status":"ok",)"
      R"("status_detail":"","steps":[{"logits_chain":")" +
      Repeat('1') + R"(","step":0,"token_chain":")" + Repeat('2') +
      R"(","token_id":11},{"logits_chain":")" + Repeat('3') + R"(","step":1,"token_chain":")" +
      Repeat('4') +
      R"(","token_id":22}],"tokens_per_s_milli":42000,"tool_version":"0.1.0","wall_ms":1500,)"
      R"("wrap_events":0})";
  EXPECT_EQ(CanonicalRunJson(TinyRun()), expected);
  EXPECT_EQ(ComputeRunId(TinyRun()), Sha256Hex(expected));
}

// Golden: changing it changes every stored run id, which needs a new schema version.
TEST(DbContentIds, RunIdIsStable) {
  EXPECT_EQ(ComputeRunId(TinyRun()),
            "f8ea5b297c82b2d202350dc40001f4282d697881c3ca5bce146cee4c86f7a66f");
  EXPECT_EQ(ComputeMachineId(TinyRun().machine),
            "f58c309b053ab0a8d01a5c27be5e73764bec9af71d69d8c6a98e98504684d95b");
  EXPECT_EQ(ComputeScenarioId(TinyRun().scenario),
            "738f3d001935a878f5eafb18f616795e3f8241c0bf0d19384f2b82cf4d9f01b2");
}

TEST(DbContentIds, AbsentFinalChainsAreLeftOut) {
  RunRecord run = TinyRun();
  run.steps.clear();
  run.n_steps = 0;
  run.final_logits_chain.reset();
  run.final_token_chain.reset();
  const std::string json = CanonicalRunJson(run);
  EXPECT_EQ(json.find("final_"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("steps":[])"), std::string::npos) << json;
}

TEST(DbContentIds, RunIdCoversEveryField) {
  const std::vector<std::function<void(RunRecord&)>> edits = {
      [](RunRecord& r) { r.scenario.canonical_text += " "; },
      [](RunRecord& r) { r.machine.fingerprint_json = R"({"cpu":"other"})"; },
      [](RunRecord& r) { r.artifact.id = Repeat('b'); },
      [](RunRecord& r) { r.configuration = "int8-cpu-b8"; },
      [](RunRecord& r) { r.engine = EngineKind::kFloat; },
      [](RunRecord& r) { r.backend = BackendKind::kReference; },
      [](RunRecord& r) { r.status = RunStatus::kCrashed; },
      [](RunRecord& r) { r.status_detail = "signal 11"; },
      [](RunRecord& r) { r.started_at = "2025-01-31T12:00:01Z"; },
      [](RunRecord& r) { r.wall_ms += 1; },
      [](RunRecord& r) { r.tokens_per_s_milli += 1; },
      [](RunRecord& r) { r.wrap_events += 1; },
      [](RunRecord& r) { r.tool_version = "0.1.1"; },
      [](RunRecord& r) { r.spec_version = "detllm-v2"; },
      [](RunRecord& r) { r.config_json = R"({"batch":8})"; },
      [](RunRecord& r) { r.steps[0].token_id = 12; },
      [](RunRecord& r) { r.steps[0].logits_chain = Repeat('5'); },
      [](RunRecord& r) { r.steps[0].token_chain = Repeat('5'); },
      [](RunRecord& r) { r.final_logits_chain.reset(); },
  };
  const std::string original = ComputeRunId(TinyRun());
  for (size_t i = 0; i < edits.size(); ++i) {
    RunRecord run = TinyRun();
    edits[i](run);
    EXPECT_NE(ComputeRunId(run), original) << "edit " << i;
  }
  // The descriptive artifact columns are the artifact row's, not the run's.
  RunRecord run = TinyRun();
  run.artifact.source = "artifact:elsewhere";
  EXPECT_EQ(ComputeRunId(run), original);
}

TEST(DbContentIds, RecognizesCanonicalJson) {
  EXPECT_TRUE(IsCanonicalJson(R"({"a":1,"b":[true,null,"x"]})"));
  EXPECT_TRUE(IsCanonicalJson("{}"));
  EXPECT_FALSE(IsCanonicalJson(R"({"b":1,"a":2})"));  // unsorted
  EXPECT_FALSE(IsCanonicalJson(R"({"a": 1})"));       // whitespace
  EXPECT_FALSE(IsCanonicalJson(R"({"a":1.5})"));      // floating point
  EXPECT_FALSE(IsCanonicalJson(R"({"a":[1,{"b":2.0}]})"));
  EXPECT_FALSE(IsCanonicalJson("{"));
  EXPECT_FALSE(IsCanonicalJson(""));
}

TEST(DbContentIds, ValidRunsPass) {
  EXPECT_NO_THROW(ValidateRun(TinyRun()));
  EXPECT_NO_THROW(ValidateRun(MakeRun("int8-cpu-b1", 512)));
  RunRecord with_id = TinyRun();
  with_id.id = ComputeRunId(with_id);
  EXPECT_NO_THROW(ValidateRun(with_id));
}

TEST(DbContentIds, InvalidRunsAreRefused) {
  const std::vector<std::pair<std::string, std::function<void(RunRecord&)>>> cases = {
      // Values no spelling names (base/run_kinds.h): only memory corruption makes them.
      {"engine", [](RunRecord& r) { r.engine = static_cast<EngineKind>(7); }},
      {"backend", [](RunRecord& r) { r.backend = static_cast<BackendKind>(9); }},
      {"status", [](RunRecord& r) { r.status = static_cast<RunStatus>(200); }},
      {"n_steps", [](RunRecord& r) { r.n_steps = 3; }},
      {"step 5 at position 1", [](RunRecord& r) { r.steps[1].step = 5; }},
      {"logits_chain", [](RunRecord& r) { r.steps[0].logits_chain = "ABC"; }},
      {"token_chain", [](RunRecord& r) { r.steps[1].token_chain = Repeat('A'); }},
      {"final_logits_chain", [](RunRecord& r) { r.final_logits_chain = Repeat('1'); }},
      {"final_token_chain", [](RunRecord& r) { r.final_token_chain.reset(); }},
      {"config_json", [](RunRecord& r) { r.config_json = R"({"batch": 1})"; }},
      {"config_json", [](RunRecord& r) { r.config_json = R"({"temperature":0.5})"; }},
      {"fingerprint_json", [](RunRecord& r) { r.machine.fingerprint_json = "not json"; }},
      {"id", [](RunRecord& r) { r.id = Repeat('0'); }},
      {"id", [](RunRecord& r) { r.machine.id = Repeat('0'); }},
      {"id", [](RunRecord& r) { r.scenario.id = Repeat('0'); }},
      {"artifact", [](RunRecord& r) { r.artifact.id = "short"; }},
      {"config_sha256", [](RunRecord& r) { r.artifact.config_sha256 = ""; }},
      {"source", [](RunRecord& r) { r.artifact.source = ""; }},
      {"wall_ms", [](RunRecord& r) { r.wall_ms = -1; }},
      {"started_at", [](RunRecord& r) { r.started_at = ""; }},
      {"spec_version", [](RunRecord& r) { r.spec_version = ""; }},
      {"negative token id", [](RunRecord& r) { r.steps[0].token_id = -1; }},
  };
  for (const auto& [needle, edit] : cases) {
    RunRecord run = TinyRun();
    edit(run);
    try {
      ValidateRun(run);
      ADD_FAILURE() << "accepted a run with a bad " << needle;
    } catch (const DbError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(needle), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

TEST(DbContentIds, AttestationIdIsTheEnvelopeDigest) {
  const AttestationRecord attestation = testing::MakeAttestation("box-a");
  EXPECT_EQ(ComputeAttestationId(attestation), Sha256Hex(attestation.envelope_json));
  AttestationRecord not_json = attestation;
  not_json.envelope_json = "{";
  EXPECT_THROW(ValidateAttestation(not_json), DbError);
}

}  // namespace
}  // namespace dv::db
