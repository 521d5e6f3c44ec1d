#include "attest/intoto_statement.h"

#include <gtest/gtest.h>

#include "attest/attest_error.h"

namespace dv::attest {
namespace {

AttestationInput SampleInput() {
  AttestationInput input;
  input.artifact = {"model.safetensors", std::string(64, 'a')};
  input.results = {"results", std::string(64, 'b')};
  input.scenario_name = "sonnet18";
  input.scenario_id = "scenario-1";
  input.machines = {{"m2", {{"cpu_model", "CPU B"}}}, {"m1", {{"cpu_model", "CPU A"}}}};
  input.configurations = {
      {"int8-ref-b1", "int8", "reference", "m1", "ok", std::string(64, '1'), std::string(64, '2'),
       512},
      {"int8-cpu-b1", "int8", "cpu", "m2", "ok", std::string(64, '1'), std::string(64, '2'), 512},
      {"int8-cpu-b1", "int8", "cpu", "m1", "ok", std::string(64, '1'), std::string(64, '2'), 512},
  };
  input.verdict = {1, 1, true};
  return input;
}

TEST(InTotoStatementTest, BuildsValidStatementWithSchema) {
  const nlohmann::json statement = BuildStatement(SampleInput());
  std::string why;
  EXPECT_TRUE(IsInTotoStatement(statement, &why)) << why;
  EXPECT_EQ(statement["_type"], kStatementType);
  EXPECT_EQ(statement["predicateType"], kRunResultsPredicateType);
  ASSERT_EQ(statement["subject"].size(), 2u);
  EXPECT_EQ(statement["subject"][0]["name"], "model.safetensors");
  EXPECT_EQ(statement["subject"][1]["digest"]["sha256"], std::string(64, 'b'));

  const nlohmann::json& predicate = statement["predicate"];
  EXPECT_EQ(predicate["scenario"]["name"], "sonnet18");
  EXPECT_EQ(predicate["scenario"]["id"], "scenario-1");
  EXPECT_EQ(predicate["verdict"]["agree"], true);
  EXPECT_EQ(predicate["verdict"]["int8_unique_logits_hashes"], 1);
  EXPECT_EQ(predicate["tool_version"], dv::build::kToolVersion);
  EXPECT_EQ(predicate["spec_version"], dv::build::kSpecVersion);
  ASSERT_EQ(predicate["configurations"].size(), 3u);
  for (const char* key : {"configuration", "engine", "backend", "machine_id", "status",
                          "final_logits_chain", "final_token_chain", "n_steps"}) {
    EXPECT_TRUE(predicate["configurations"][0].contains(key)) << key;
  }
  EXPECT_EQ(predicate["configurations"][0]["n_steps"], 512);
}

TEST(InTotoStatementTest, OrderOfInputsDoesNotMatter) {
  AttestationInput reversed = SampleInput();
  std::reverse(reversed.machines.begin(), reversed.machines.end());
  std::reverse(reversed.configurations.begin(), reversed.configurations.end());
  const nlohmann::json statement = BuildStatement(SampleInput());
  EXPECT_EQ(BuildStatement(reversed), statement);
  EXPECT_EQ(statement["predicate"]["machines"][0]["machine_id"], "m1");
  EXPECT_EQ(statement["predicate"]["configurations"][0]["machine_id"], "m1");
  EXPECT_EQ(statement["predicate"]["configurations"][1]["machine_id"], "m2");
  EXPECT_EQ(statement["predicate"]["configurations"][2]["configuration"], "int8-ref-b1");
}

TEST(InTotoStatementTest, RejectsMalformedDigest) {
  AttestationInput input = SampleInput();
  input.artifact.sha256 = "ABC";
  EXPECT_THROW(BuildStatement(input), AttestError);
  input.artifact.sha256 = std::string(64, 'A');  // uppercase is not the canonical spelling
  EXPECT_THROW(BuildStatement(input), AttestError);
}

TEST(InTotoStatementTest, ValidationNamesTheProblem) {
  const nlohmann::json good = BuildStatement(SampleInput());
  std::string why;

  nlohmann::json bad = good;
  bad["_type"] = "https://in-toto.io/Statement/v0.1";
  EXPECT_FALSE(IsInTotoStatement(bad, &why));
  EXPECT_NE(why.find("_type"), std::string::npos) << why;

  bad = good;
  bad["subject"] = nlohmann::json::array();
  EXPECT_FALSE(IsInTotoStatement(bad, &why));
  EXPECT_NE(why.find("subject"), std::string::npos) << why;

  bad = good;
  bad["subject"][1]["digest"].erase("sha256");
  bad["subject"][1]["digest"]["sha512"] = std::string(128, 'a');
  EXPECT_FALSE(IsInTotoStatement(bad, &why));
  EXPECT_NE(why.find("subject[1].digest.sha256"), std::string::npos) << why;

  bad = good;
  bad.erase("predicateType");
  EXPECT_FALSE(IsInTotoStatement(bad, &why));
  EXPECT_NE(why.find("predicateType"), std::string::npos) << why;

  EXPECT_FALSE(IsInTotoStatement("a string", nullptr));
}

TEST(InTotoStatementTest, MatchesItselfAndIgnoresSubjectOrder) {
  const nlohmann::json statement = BuildStatement(SampleInput());
  std::string why;
  EXPECT_TRUE(StatementMatches(statement, statement, &why)) << why;
  nlohmann::json swapped = statement;
  std::swap(swapped["subject"][0], swapped["subject"][1]);
  EXPECT_TRUE(StatementMatches(swapped, statement, &why)) << why;
}

TEST(InTotoStatementTest, DetectsChangedFinalHash) {
  const nlohmann::json expected = BuildStatement(SampleInput());
  AttestationInput changed_input = SampleInput();
  changed_input.configurations[1].final_logits_chain = std::string(64, '9');
  const nlohmann::json changed = BuildStatement(changed_input);
  std::string why;
  EXPECT_FALSE(StatementMatches(changed, expected, &why));
  EXPECT_NE(why.find("/predicate/configurations/"), std::string::npos) << why;
  EXPECT_NE(why.find("final_logits_chain"), std::string::npos) << why;
  EXPECT_NE(why.find(std::string(64, '9').substr(0, 20)), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
}

TEST(InTotoStatementTest, DetectsChangedSubjectDigestAndVerdict) {
  const nlohmann::json expected = BuildStatement(SampleInput());
  std::string why;

  AttestationInput input = SampleInput();
  input.artifact.sha256 = std::string(64, 'f');
  EXPECT_FALSE(StatementMatches(BuildStatement(input), expected, &why));
  EXPECT_NE(why.find("/subject/"), std::string::npos) << why;

  input = SampleInput();
  input.verdict.agree = false;
  EXPECT_FALSE(StatementMatches(BuildStatement(input), expected, &why));
  EXPECT_NE(why.find("/predicate/verdict/agree"), std::string::npos) << why;

  input = SampleInput();
  input.configurations.pop_back();
  EXPECT_FALSE(StatementMatches(BuildStatement(input), expected, &why));
  EXPECT_NE(why.find("/predicate/configurations/"), std::string::npos) << why;
  EXPECT_NE(why.find("more difference"), std::string::npos) << why;

  nlohmann::json missing_machine = expected;
  missing_machine["predicate"]["machines"].erase(1);
  EXPECT_FALSE(StatementMatches(missing_machine, expected, &why));
  EXPECT_NE(why.find("/predicate/machines/1: missing"), std::string::npos) << why;

  nlohmann::json other_type = expected;
  other_type["predicateType"] = "https://example.com/other/v1";
  EXPECT_FALSE(StatementMatches(other_type, expected, &why));
  EXPECT_NE(why.find("/predicateType"), std::string::npos) << why;
}

}  // namespace
}  // namespace dv::attest
