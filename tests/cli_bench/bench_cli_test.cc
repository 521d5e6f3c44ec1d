// `detverify bench` through the binary. The numbers themselves are the machine's (the bench
// reports them, tests do not judge them); what is checked is that every measurement the bench
// promises is there and consistent with the options, and that bad options get one line and
// exit 2 before any measurement.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::Detverify;
using fleet_testing::LineCount;

// Small and quick: a 256 MiB probe is the smallest the bench accepts. `overrides` replace the
// value of an option of the defaults or add an option.
std::vector<std::string> Quick(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::pair<std::string, std::string>> options = {
      {"--preset", "qwen3-tiny"}, {"--prefill", "8,16"},   {"--decode-batch", "1,2"},
      {"--repeats", "1"},         {"--decode-steps", "4"}, {"--context", "4"},
      {"--bandwidth-mib", "256"}};
  for (const auto& [name, value] : overrides) {
    bool replaced = false;
    for (auto& option : options) {
      if (option.first == name) {
        option.second = value;
        replaced = true;
      }
    }
    if (!replaced) options.emplace_back(name, value);
  }
  std::vector<std::string> args = {"bench"};
  for (const auto& [name, value] : options) {
    args.push_back(name);
    if (!value.empty()) args.push_back(value);
  }
  return args;
}

TEST(BenchCli, JsonReportHasEveryMeasurement) {
  const auto r = Detverify(Quick({{"--backend", "cpu"}, {"--threads", "2"}, {"--json", ""}}));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("backend"), "cpu");
  EXPECT_EQ(j.at("threads"), 2);
  EXPECT_FALSE(j.at("isa").get<std::string>().empty());
  EXPECT_EQ(j.at("model").at("source"), "synthetic:qwen3-tiny seed=0");
  ASSERT_EQ(j.at("prefill").size(), 2u);
  EXPECT_EQ(j.at("prefill")[0].at("tokens"), 8);
  EXPECT_EQ(j.at("prefill")[1].at("tokens"), 16);
  for (const auto& p : j.at("prefill")) EXPECT_GT(p.at("tokens_per_s").get<double>(), 0);
  ASSERT_EQ(j.at("decode").size(), 2u);
  EXPECT_EQ(j.at("decode")[0].at("batch"), 1);
  EXPECT_EQ(j.at("decode")[1].at("batch"), 2);
  for (const auto& d : j.at("decode")) {
    EXPECT_EQ(d.at("steps"), 4);
    EXPECT_EQ(d.at("context"), 4);
    EXPECT_GT(d.at("tokens_per_s").get<double>(), 0);
  }
  EXPECT_TRUE(j.at("decode")[1].contains("vs_batch1"));
  // Where a step's time goes: its products read the roofline's weight bytes, once a step
  // whatever the batch, and its parts add up to the step.
  const int64_t weight_bytes = j.at("roofline").at("weight_bytes_per_token").get<int64_t>();
  for (const auto& d : j.at("decode")) {
    const auto& s = d.at("step");
    EXPECT_EQ(s.at("timed_steps"), 4);  // --repeats 1 x --decode-steps 4
    EXPECT_EQ(s.at("layer_products_bytes").get<int64_t>() + s.at("head_bytes").get<int64_t>(),
              weight_bytes);
    const double step = s.at("seconds_mean").get<double>();
    const double layer = s.at("layer_products_seconds").get<double>();
    const double head = s.at("head_seconds").get<double>();
    EXPECT_GT(layer, 0);
    EXPECT_GT(head, 0);
    EXPECT_NEAR(layer + head + s.at("rest_seconds").get<double>(), step, 1e-9 + 1e-6 * step);
    EXPECT_GT(s.at("layer_products_gbps").get<double>(), 0);
    EXPECT_GT(s.at("head_gbps").get<double>(), 0);
  }
  EXPECT_GT(j.at("bandwidth").at("huge_pages_gbps").get<double>(), 0);
  EXPECT_GT(j.at("bandwidth").at("small_pages_gbps").get<double>(), 0);
  EXPECT_EQ(j.at("bandwidth").at("buffer_bytes"), int64_t{256} << 20);
  // The roofline divides the model's int8 weight bytes by the best bandwidth probe.
  EXPECT_GT(j.at("roofline").at("weight_bytes_per_token").get<int64_t>(), 0);
  EXPECT_GT(j.at("roofline").at("decode_b1_fraction").get<double>(), 0);
  EXPECT_GT(j.at("peak_rss_bytes").get<int64_t>(), 0);
  EXPECT_GT(j.at("packed_weight_bytes").get<int64_t>(), 0);
  EXPECT_EQ(j.at("fingerprint").at("spec_version"), "detllm-v1");
}

TEST(BenchCli, ReferenceBackendAndTextReport) {
  const auto r = Detverify(Quick({{"--backend", "reference"}}));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {"prefill 8", "prefill 16", "decode b1", "decode b2", "a step",
                           "layer products", "LM head", "bandwidth", "roofline", "peak RSS"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " missing from:\n" << r.out;
  }
}

TEST(BenchCli, ForcedIsaLevelIsReported) {
  const auto r = Detverify(Quick({{"--isa", "scalar"}, {"--json", ""}}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("isa"), "scalar");
}

// Each rejected option: exit 2, one line on stderr naming the problem, nothing measured.
TEST(BenchCli, FloatEngineReport) {
  for (const char* dtype : {"fp32", "bf16"}) {
    const auto r = Detverify(
        Quick({{"--engine", "float"}, {"--dtype", dtype}, {"--threads", "1"}, {"--json", ""}}));
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("engine"), "float");
    EXPECT_EQ(j.at("dtype"), dtype);
    EXPECT_EQ(j.at("threads"), 1);
    EXPECT_NE(j.at("blas").get<std::string>().find("OpenBLAS"), std::string::npos);
    EXPECT_EQ(j.at("model").at("source"), "synthetic-hf:qwen3-tiny seed=0");
    ASSERT_EQ(j.at("prefill").size(), 2u);
    ASSERT_EQ(j.at("decode").size(), 2u);
    for (const auto& d : j.at("decode")) {
      EXPECT_GT(d.at("tokens_per_s").get<double>(), 0);
      EXPECT_FALSE(d.contains("step")) << "the float engine's products are OpenBLAS's: not timed";
    }
    // fp32 weights: 4 bytes per parameter are read per decoded token.
    EXPECT_EQ(j.at("roofline").at("weight_bytes_per_token"), j.at("packed_weight_bytes"));
    EXPECT_GT(j.at("peak_rss_bytes").get<int64_t>(), 0);
  }
  const auto t = Detverify(Quick({{"--engine", "float"}}));
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("detverify bench: float engine fp32, OpenBLAS"), std::string::npos) << t.out;
}

TEST(BenchCli, BadOptionsAreOneLineErrors) {
  const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> cases = {
      {{"--isa", "foo"}, "unknown cpu ISA level 'foo'"},
      {{"--prefill", "abc"}, "--prefill: 'abc' is not a positive integer"},
      {{"--prefill", "0"}, "--prefill: '0' is not a positive integer"},
      {{"--decode-batch", "0"}, "--decode-batch: '0' is not a positive integer"},
      {{"--backend", "gpu"}, "unknown backend 'gpu'"},
      {{"--bandwidth-mib", "16"}, "--bandwidth-mib must be at least 256"},
      {{"--threads", "-3"}, "--threads: Value -3 not in range 0 to 1024"},
      {{"--repeats", "x"}, "--repeats"},
      {{"--dtype", "bf16"}, "--dtype applies to --engine float"},
      {{"--engine", "fp16"}, "--engine: fp16 not in {int8,float}"},
  };
  for (const auto& [option, needle] : cases) {
    const auto r = Detverify(Quick({option}));
    EXPECT_EQ(r.code, 2) << option.first << ": " << r.err;
    EXPECT_EQ(LineCount(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("detverify: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("prefill"), std::string::npos) << r.out;
  }
}

TEST(BenchCli, FloatEngineBadOptions) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--engine", "float", "--backend", "reference"}, "the float engine runs on the cpu"},
      {{"--engine", "float", "--isa", "avx2"}, "--isa applies to the int8 engine"},
      {{"--engine", "float", "--dtype", "int4"}, "float dtype must be fp32, bf16 or fp16"},
      // "the float engine on cuda runs fp16", or a build without it: either way one line.
      {{"--engine", "float", "--backend", "cuda", "--dtype", "bf16"}, "on cuda"},
  };
  for (const auto& [extra, needle] : cases) {
    auto args = Quick({});
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = Detverify(args);
    EXPECT_EQ(r.code, 2) << needle << ": " << r.err;
    EXPECT_EQ(LineCount(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
}

TEST(BenchCli, MissingArtifactNamesTheFile) {
  const auto r = Detverify({"bench", "--artifact", "/nonexistent/artifact"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/artifact/config.json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dv
