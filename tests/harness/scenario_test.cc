// Scenario validation: every bad file is refused with "file:line: problem" (a table of cases),
// the shipped scenarios are valid, and the canonical text ignores formatting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/plan_builder.h"
#include "harness/scenario.h"

namespace dv::harness {
namespace {

namespace fs = std::filesystem;

std::string WriteTemp(const std::string& text) {
  static int n = 0;
  const fs::path p = fs::temp_directory_path() / ("dv_scenario_" + std::to_string(::getpid()) +
                                                  "_" + std::to_string(n++) + ".yaml");
  std::ofstream(p) << text;
  return p.string();
}

const char* kGood = R"(name: t
model: { fallback: synthetic:qwen3-tiny }
prompt: { ids: [1, 2, 3] }
generate: { max_new: 4 }
configurations:
  - { name: a, engine: int8, backend: reference }
)";

struct BadCase {
  const char* what;
  const char* yaml;
  int line;
  const char* problem;
};

const BadCase kBad[] = {
    {"malformed yaml", "name: t\nmodel: [unclosed\n", 3, "malformed YAML"},
    {"not a mapping", "- a\n- b\n", 1, "must be a YAML mapping"},
    {"unknown top key", "name: t\nmodle: {}\n", 2, "unknown key 'modle'"},
    {"missing configurations",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n",
     1, "missing required key 'configurations'"},
    {"unknown config key",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, backend: reference }\n  - { name: b, bakend: cpu }\n",
     7, "unknown key 'bakend'"},
    {"duplicate config",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a }\n  - { name: a }\n",
     7, "duplicate configuration name 'a' (first at line 6)"},
    {"bad backend",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, backend: tpu }\n",
     6, "a.backend must be one of cpu | cuda | reference, got 'tpu'"},
    {"negative max_new",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: -3 }\nconfigurations: [ { name: a } ]\n",
     4, "generate.max_new must be in [1,"},
    {"non-integer id",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1, x] }\ngenerate: { "
     "max_new: 1 }\nconfigurations: [ { name: a } ]\n",
     3, "prompt.ids entry must be an integer, got 'x'"},
    {"two prompt sources",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1], text: hi "
     "}\ngenerate: { max_new: 1 }\nconfigurations: [ { name: a } ]\n",
     3, "exactly one of ids, text, text_file"},
    {"unknown preset",
     "name: t\nmodel: { fallback: synthetic:qwen3-70b }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\nconfigurations: [ { name: a } ]\n",
     2, "unknown synthetic preset 'qwen3-70b'"},
    {"batch position outside",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - name: a\n    batch: { size: 2, co_prompts: true, position: 2 }\n",
     7, "a.batch.position 2 is outside a batch of 2"},
    {"batch without co-prompts",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, batch: { size: 4 } }\n",
     6, "a.batch.size > 1 needs co_prompts: true"},
    {"cuda graphs on cpu",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, backend: cpu, cuda_graphs: true }\n",
     6, "a.cuda_graphs needs backend: cuda"},
    {"bad expect hex",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "expect:\n  - { artifact: XYZ, logits: 0123456789ab, tokens: 0123456789ab }\nconfigurations: "
     "[ { name: a } ]\n",
     6, "expect.artifact must be 12 to 64 lowercase hex digits"},
    {"empty configurations",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\nconfigurations: []\n",
     5, "configurations must be a non-empty list"},
    {"model without source",
     "name: t\nmodel: {}\nprompt: { ids: [1] }\ngenerate: { max_new: 1 }\nconfigurations: [ { "
     "name: a } ]\n",
     2, "model needs an artifact, an hf checkpoint, a fallback, or some of them"},
    {"unknown platform",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, platform: riscv64 }\n",
     6, "a.platform must be one of aarch64 | s390x, got 'riscv64'"},
    {"emulated cuda",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, backend: cuda, platform: aarch64 }\n",
     6, "a.platform applies to engine: int8 with backend reference or cpu"},
};

TEST(ScenarioErrors, EachBadFileNamesFileLineAndProblem) {
  for (const BadCase& c : kBad) {
    const std::string path = WriteTemp(c.yaml);
    try {
      LoadScenario(path);
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const ScenarioError& e) {
      const std::string msg = e.what();
      const std::string where = path + ":" + std::to_string(c.line) + ": ";
      EXPECT_EQ(msg.rfind(where, 0), 0u) << c.what << ": " << msg;
      EXPECT_NE(msg.find(c.problem), std::string::npos) << c.what << ": " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << c.what;
    }
    fs::remove(path);
  }
}

TEST(ScenarioErrors, MissingFile) {
  try {
    LoadScenario("/nonexistent/x.yaml");
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/x.yaml:1: cannot open the file");
  }
}

TEST(Scenario, ParsesDefaultsAndCanonicalTextIgnoresFormatting) {
  const std::string a = WriteTemp(kGood);
  const std::string b = WriteTemp(
      "name: t\nmodel:\n  fallback: synthetic:qwen3-tiny\nprompt:\n  ids:\n    - 1\n    - 2\n    - "
      "3\n"
      "generate:\n  max_new: 4   # comment\nconfigurations:\n  - name: a\n    engine: int8\n    "
      "backend: reference\n");
  const Scenario sa = LoadScenario(a), sb = LoadScenario(b);
  EXPECT_EQ(sa.configurations[0].timeout_s, 3600);
  EXPECT_EQ(sa.configurations[0].batch.size, 1);
  EXPECT_EQ(CanonicalScenarioText(sa), CanonicalScenarioText(sb));
  fs::remove(a);
  fs::remove(b);
}

// An emulated row is its own configuration; scenarios without one keep their canonical text
// (their identity in result DBs) unchanged.
TEST(Scenario, PlatformKeyAndCanonicalText) {
  const std::string plain = WriteTemp(kGood);
  const std::string emulated =
      WriteTemp(std::string(kGood) + "  - { name: b, backend: cpu, platform: s390x }\n");
  const Scenario sp = LoadScenario(plain), se = LoadScenario(emulated);
  EXPECT_EQ(sp.configurations[0].platform, "");
  EXPECT_EQ(se.configurations[1].platform, "s390x");
  EXPECT_EQ(CanonicalScenarioText(sp).find("platform"), std::string::npos);
  EXPECT_NE(CanonicalScenarioText(se).find(R"("platform":"s390x")"), std::string::npos);
  fs::remove(plain);
  fs::remove(emulated);
}

TEST(Scenario, ShippedScenariosAreValid) {
  const std::string src =
      std::getenv("DETVERIFY_SOURCE_DIR") ? std::getenv("DETVERIFY_SOURCE_DIR") : ".";
  for (const char* name : {"demo.yaml", "quick.yaml", "tiny-a.yaml", "cross.yaml"}) {
    EXPECT_NO_THROW(LoadScenario(src + "/scenarios/" + name)) << name;
  }
}

}  // namespace
}  // namespace dv::harness

namespace dv::harness {
namespace {

TEST(ScenarioPrompt, ExpectIdsMismatchNamesTheIndex) {
  const std::string path = WriteTemp(
      "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt:\n  text: \"Hello world\"\n"
      "  expect_ids: [9707, 1000]\ngenerate: { max_new: 1 }\nconfigurations: [ { name: a } ]\n");
  const Scenario s = LoadScenario(path);
  const ResolvedModel m = ResolveModel(s);
  try {
    ResolvePrompt(s, m);
    FAIL() << "accepted ids that differ from expect_ids";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("differ from prompt.expect_ids at index 1"),
              std::string::npos)
        << e.what();
  }
  fs::remove(path);
}

}  // namespace
}  // namespace dv::harness
