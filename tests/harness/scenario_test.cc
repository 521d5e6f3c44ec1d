// Scenario validation: every bad file is refused with "file:line: problem" (a table of cases),
// the shipped scenarios are valid, and the canonical text ignores formatting.
#include <gtest/gtest.h>
#include <sys/stat.h>
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
     "configurations:\n  - { name: a, engine: int8, backend: reference }\n  - { name: b, engine: "
     "int8, bakend: cpu }\n",
     7, "unknown key 'bakend'"},
    {"duplicate config",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, engine: int8 }\n  - { name: a, engine: int8 }\n",
     7, "duplicate configuration name 'a' (first at line 6)"},
    {"bad backend",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, engine: int8, backend: tpu }\n",
     6, "a.backend must be one of cpu | cuda | reference, got 'tpu'"},
    {"negative max_new",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: -3 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     4, "generate.max_new must be in [1,"},
    {"non-integer id",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1, x] }\ngenerate: { "
     "max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     3, "prompt.ids entry must be an integer, got 'x'"},
    {"two prompt sources",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1], text: hi "
     "}\ngenerate: { max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     3, "exactly one of ids, text, text_file"},
    {"unknown preset",
     "name: t\nmodel: { fallback: synthetic:qwen3-70b }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     2, "unknown synthetic preset 'qwen3-70b'"},
    {"unknown fallback kind",
     "name: t\nmodel: { fallback: grown:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\nconfigurations: [ { name: a } ]\n",
     2, "model.fallback must be synthetic:<preset> or prepared:<preset>, got 'grown:qwen3-tiny'"},
    {"unknown prepared preset",
     "name: t\nmodel: { fallback: prepared:qwen3-70b }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\nconfigurations: [ { name: a } ]\n",
     2, "unknown prepared preset 'qwen3-70b'"},
    {"batch position outside",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - name: a\n    engine: int8\n    batch: { size: 2, co_prompts: true, "
     "position: 2 }\n",
     8, "a.batch.position 2 is outside a batch of 2"},
    {"batch without co-prompts",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, engine: int8, batch: { size: 4 } }\n",
     6, "a.batch.size > 1 needs co_prompts: true"},
    {"cuda graphs on cpu",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, engine: int8, backend: cpu, cuda_graphs: true }\n",
     6, "a.cuda_graphs needs backend: cuda"},
    {"bad expect hex",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "expect:\n  - { artifact: XYZ, logits: 0123456789ab, tokens: 0123456789ab }\nconfigurations: "
     "[ { name: a, engine: int8 } ]\n",
     6, "expect.artifact must be 12 to 64 lowercase hex digits"},
    {"empty configurations",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\nconfigurations: []\n",
     5, "configurations must be a non-empty list"},
    {"model without source",
     "name: t\nmodel: {}\nprompt: { ids: [1] }\ngenerate: { max_new: 1 }\nconfigurations: [ { "
     "name: a } ]\n",
     2, "model needs an artifact, an hf checkpoint or a gguf file, a fallback, or some of them"},
    {"prepare and artifact both",
     "name: t\nmodel: { artifact: a, gguf: m.gguf, prepare: { calib: c.txt } }\nprompt: { ids: "
     "[1] }\ngenerate: { max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     2, "model.artifact and model.prepare both name the int8 rows' model; give one"},
    {"prepare without a float model",
     "name: t\nmodel: { prepare: { calib: c.txt } }\nprompt: { ids: [1] }\ngenerate: { max_new: "
     "1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     2, "model.prepare needs the float model it prepares (model.gguf or model.hf)"},
    {"prepare without calib",
     "name: t\nmodel: { gguf: m.gguf, prepare: { samples: 2 } }\nprompt: { ids: [1] }\ngenerate: "
     "{ max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     2, "model.prepare needs calib (a calibration text file)"},
    {"prepare samples out of range",
     "name: t\nmodel: { gguf: m.gguf, prepare: { calib: c.txt, samples: 0 } }\nprompt: { ids: [1] "
     "}\ngenerate: { max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     2, "model.prepare.samples must be"},
    {"hf and gguf both",
     "name: t\nmodel: { hf: ckpt, gguf: m.gguf }\nprompt: { ids: [1] }\ngenerate: { max_new: 1 "
     "}\nconfigurations: [ { name: a, engine: float } ]\n",
     2, "model.hf and model.gguf both name the float rows' model; give one"},
    {"unknown platform",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, engine: int8, platform: riscv64 }\n",
     6, "a.platform must be one of aarch64 | s390x, got 'riscv64'"},
    {"emulated cuda",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\n"
     "configurations:\n  - { name: a, engine: int8, backend: cuda, platform: aarch64 }\n",
     6, "a.platform applies to engine: int8 with backend reference or cpu"},
    // Ambiguous files: a key twice (yaml-cpp would take the first, other readers the last), a
    // second document (YAML::Load would ignore it).
    {"duplicate top-level key",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\nname: u\nconfigurations: [ { name: a, engine: int8 } ]\n",
     5, "duplicate key 'name' in the scenario (first at line 1)"},
    {"duplicate nested key",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\nconfigurations:\n  - name: a\n    engine: int8\n    backend: reference\n"
     "    backend: cpu\n",
     9, "duplicate key 'backend' in configurations[0] (first at line 8)"},
    {"duplicate key in a flow mapping",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1, max_new: 2 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     4, "duplicate key 'max_new' in generate"},
    {"second document",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n---\nname: u\n",
     6, "a second YAML document"},
    {"non-string key", "name: t\n[a]: 1\n", 2, "a key in the scenario must be a string"},
    // Values out of range or missing.
    {"expect.steps beyond max_new",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 4 }\nexpect:\n  - { artifact: 0123456789ab, logits: 0123456789ab, tokens: "
     "0123456789ab, steps: 5 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     6, "expect.steps must be in [1, 4], got 5"},
    {"missing engine",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\ngenerate: { "
     "max_new: 1 }\nconfigurations:\n  - { name: a, backend: cpu }\n",
     6, "a needs an engine (int8 or float)"},
    {"split longer than an ids prompt",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1, 2, 3] }\n"
     "generate: { max_new: 1 }\nconfigurations:\n  - name: a\n    engine: int8\n"
     "    split: { prefill: 4 }\n",
     8, "a.split.prefill 4 is longer than the prompt (3 tokens)"},
    {"split longer than first_tokens",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1, 2, 3], "
     "first_tokens: 2 }\ngenerate: { max_new: 1 }\nconfigurations:\n"
     "  - { name: a, engine: int8, split: { prefill: 3 } }\n",
     6, "a.split.prefill 3 is longer than the prompt (2 tokens)"},
    // Names: strings as YAML means them, no control characters.
    {"numeric scenario name",
     "name: 123\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\n"
     "generate: { max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     1, "name must be a string, got the plain scalar 123"},
    {"null scenario name",
     "name: ~\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\n"
     "generate: { max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     1, "name must be a string"},
    {"list as scenario name",
     "name: [a, b]\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\n"
     "generate: { max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     1, "name must be a string"},
    {"control character in scenario name",
     "name: \"a\\tb\"\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\n"
     "generate: { max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     1, "name must not contain control characters"},
    {"escape sequence in scenario name",
     "name: \"a\\x1b[31mb\"\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] "
     "}\ngenerate: { max_new: 1 }\nconfigurations: [ { name: a, engine: int8 } ]\n",
     1, "name must not contain control characters"},
    {"boolean configuration name",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\n"
     "generate: { max_new: 1 }\nconfigurations:\n  - { name: true, engine: int8 }\n",
     6, "configurations[0].name must be a string, got the plain scalar true"},
    {"numeric configuration name",
     "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\n"
     "generate: { max_new: 1 }\nconfigurations:\n  - { name: 1.5e3, engine: int8 }\n",
     6, "configurations[0].name must be a string, got the plain scalar 1.5e3"},
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
  const std::string emulated = WriteTemp(
      std::string(kGood) + "  - { name: b, engine: int8, backend: cpu, platform: s390x }\n");
  const Scenario sp = LoadScenario(plain), se = LoadScenario(emulated);
  EXPECT_EQ(sp.configurations[0].platform, "");
  EXPECT_EQ(se.configurations[1].platform, "s390x");
  EXPECT_EQ(CanonicalScenarioText(sp).find("platform"), std::string::npos);
  EXPECT_NE(CanonicalScenarioText(se).find(R"("platform":"s390x")"), std::string::npos);
  fs::remove(plain);
  fs::remove(emulated);
}

// A prepared fallback is another model: its scenario text differs, while the texts (and so the
// ids) of scenarios with a synthetic fallback keep their form.
TEST(Scenario, PreparedFallbackAndCanonicalText) {
  const std::string synthetic = WriteTemp(kGood);
  std::string text = kGood;
  text.replace(text.find("synthetic:"), 10, "prepared:");
  const std::string prepared = WriteTemp(text);
  const Scenario ss = LoadScenario(synthetic), sp = LoadScenario(prepared);
  EXPECT_EQ(ss.model.fallback_kind, "synthetic");
  EXPECT_EQ(sp.model.fallback_kind, "prepared");
  EXPECT_EQ(sp.model.fallback_preset, "qwen3-tiny");
  EXPECT_EQ(CanonicalScenarioText(ss).find("fallback_kind"), std::string::npos);
  EXPECT_NE(CanonicalScenarioText(sp).find(R"("fallback_kind":"prepared")"), std::string::npos);
  fs::remove(synthetic);
  fs::remove(prepared);
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
      "  expect_ids: [9707, 1000]\ngenerate: { max_new: 1 }\nconfigurations: [ { name: a, engine: "
      "int8 } ]\n");
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

namespace dv::harness {
namespace {

TEST(Scenario, QuotedNumbersAreNames) {
  const std::string path = WriteTemp(
      "name: \"2026\"\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { ids: [1] }\n"
      "generate: { max_new: 1 }\nconfigurations: [ { name: '7', engine: int8 } ]\n");
  const Scenario s = LoadScenario(path);
  EXPECT_EQ(s.name, "2026");
  EXPECT_EQ(s.configurations[0].name, "7");
  fs::remove(path);
}

// The values that depend on the model (qwen3-tiny: vocabulary 1024, 2048 positions), checked
// once the prompt is known, each naming file:line.
TEST(ScenarioAgainstModel, OutOfRangeValuesNameFileAndLine) {
  struct Case {
    const char* what;
    std::string yaml;
    int line;
    const char* problem;
  };
  const std::string head = "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\n";
  const std::vector<Case> cases = {
      {"max_new beyond the positions",
       head + "prompt: { ids: [1, 2, 3] }\ngenerate:\n  max_new: 2047\n"
              "configurations: [ { name: a, engine: int8 } ]\n",
       5,
       "generate.max_new 2047 with a prompt of 3 tokens needs 2049 positions; the model has 2048"},
      {"co-prompt vocabulary outside the model",
       head + "prompt: { ids: [1] }\ngenerate: { max_new: 2 }\n"
              "co_prompts:\n  seed: 1\n  vocab: [0, 1024]\n"
              "configurations: [ { name: a, engine: int8 } ]\n",
       7, "co_prompts.vocab [0, 1024] is outside the model's vocabulary (ids 0 to 1023)"},
      {"batched co-prompts beyond the positions",
       head +
           "prompt: { ids: [1] }\ngenerate: { max_new: 100 }\n"
           "co_prompts: { length: [5, 2000] }\n"
           "configurations:\n  - { name: a, engine: int8, batch: { size: 2, co_prompts: true } }\n",
       5, "co-prompts of up to 2000 tokens with generate.max_new 100 need 2099 positions"},
  };
  for (const Case& c : cases) {
    const std::string path = WriteTemp(c.yaml);
    const Scenario s = LoadScenario(path);
    const ResolvedModel m = ResolveModel(s);
    try {
      ResolvePrompt(s, m);
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const ScenarioError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path + ":" + std::to_string(c.line) + ": ", 0), 0u)
          << c.what << ": " << msg;
      EXPECT_NE(msg.find(c.problem), std::string::npos) << c.what << ": " << msg;
    }
    fs::remove(path);
  }
}

// A FIFO or a device as the scenario (or its text_file) is refused at once.
TEST(ScenarioErrors, FifoAndDevicesAreRefusedWithoutBlocking) {
  const fs::path fifo =
      fs::temp_directory_path() / ("dv_scenario_fifo_" + std::to_string(::getpid()));
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path :
       {fifo.string(), std::string("/dev/zero"), std::string("/dev/urandom")}) {
    try {
      LoadScenario(path);
      ADD_FAILURE() << path << ": accepted";
    } catch (const ScenarioError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ":1: cannot open the file (", 0), 0u)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
  fs::remove(fifo);
}

}  // namespace
}  // namespace dv::harness
