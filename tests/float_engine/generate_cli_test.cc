// `detverify generate --engine float` through the binary: the float64 reference's greedy
// continuation, the logits dump (float32 [steps, vocab], matching the reference), the int8
// dump (int32), and every usage error as one line with exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/float_engine/float_reference.h"
#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::Detverify;
using fleet_testing::LineCount;

std::string Join(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

TEST(GenerateFloatCli, GreedyChainsAndLogitsDump) {
  const test::FloatReference ref = test::LoadFloatReference("qwen3-tiny");
  test_files::ScratchDir d("gencli");
  const std::string npy = d.File("logits.npy");
  const auto steps = static_cast<int64_t>(ref.continuation.size());
  const auto r = Detverify({"generate", "--engine", "float", "--preset", "qwen3-tiny",
                            "--prompt-ids", Join(ref.prompt), "--max-new", std::to_string(steps),
                            "--batch", "3", "--co-prompts", "random", "--split", "2",
                            "--dump-logits", npy, "--json", "--full-chains"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("engine"), "float");
  EXPECT_EQ(j.at("dtype"), "fp32");
  EXPECT_EQ(j.at("checkpoint").at("sha256"), ref.model_sha256);
  EXPECT_EQ(j.at("checkpoint").at("source"), "synthetic-hf:qwen3-tiny seed=0");
  EXPECT_FALSE(j.at("blas").get<std::string>().empty());
  EXPECT_EQ(j.at("rows")[0].at("tokens").get<std::vector<int32_t>>(), ref.continuation);
  EXPECT_EQ(j.at("rows")[0].at("logits_chain").size(), static_cast<size_t>(steps));
  const auto a = test_files::ReadNpy(npy);
  EXPECT_EQ(a.descr, "<f4");
  ASSERT_EQ(a.shape, (std::vector<int64_t>{steps, ref.vocab}));
  const std::vector<double> logits = a.ToFloat64();
  std::vector<float> row(static_cast<size_t>(ref.vocab));
  for (int64_t s = 0; s < steps; ++s) {
    for (int64_t i = 0; i < ref.vocab; ++i) {
      row[static_cast<size_t>(i)] =
          static_cast<float>(logits[static_cast<size_t>(s * ref.vocab + i)]);
    }
    test::ExpectPositionMatches(ref, static_cast<int64_t>(ref.prompt.size()) - 1 + s, row.data(),
                                test::kFp32RelTol, "dumped step " + std::to_string(s));
  }
  // The text report names the engine and the dump.
  const auto t = Detverify({"generate", "--engine", "float", "--dtype", "bf16", "--preset",
                            "qwen3-tiny", "--prompt-ids", "1,2,3", "--max-new", "2"});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("engine        float bf16 (OpenBLAS, "), std::string::npos) << t.out;
}

TEST(GenerateFloatCli, HfFolderAndInt8Dump) {
  test_files::ScratchDir d("gencli");
  ASSERT_EQ(
      Detverify({"synth", "--preset", "qwen3-tiny", "--format", "hf", "--out", d.File("hf")}).code,
      0);
  const auto r = Detverify({"generate", "--engine", "float", "--hf", d.File("hf"), "--prompt-ids",
                            "1,2,3", "--max-new", "3", "--threads", "1", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("threads"), 1);
  EXPECT_EQ(j.at("checkpoint").at("source"), "hf:" + d.File("hf"));
  const std::string npy = d.File("int.npy");
  const auto i = Detverify({"generate", "--preset", "qwen3-tiny", "--prompt-ids", "1,2,3",
                            "--max-new", "4", "--dump-logits", npy, "--json"});
  ASSERT_EQ(i.code, 0) << i.err;
  const auto a = test_files::ReadNpy(npy);
  EXPECT_EQ(a.descr, "<i4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{4, 1024}));
  EXPECT_EQ(nlohmann::json::parse(i.out).at("engine"), "int8");
}

// `synth --format gguf` writes the file of tests/data/float/llama-tiny-gguf (its SHA-256 is the
// first word synth prints), and `generate --gguf` on it continues greedily as the float64
// reference, which read the file with gguf-py and transformers.
TEST(GenerateFloatCli, SyntheticGgufFollowsTheReference) {
  const test::FloatReference ref = test::LoadFloatReference("llama-tiny-gguf");
  test_files::ScratchDir d("gencli");
  const std::string gguf = d.File("sub/llama-tiny.gguf");  // synth creates sub/
  const auto s = Detverify({"synth", "--format", "gguf", "--preset", ref.preset, "--out", gguf});
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(s.out, ref.model_sha256 + "  " + gguf + "\n");
  const auto r =
      Detverify({"generate", "--engine", "float", "--gguf", gguf, "--prompt-ids", Join(ref.prompt),
                 "--max-new", std::to_string(ref.continuation.size()), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("checkpoint").at("sha256"), ref.model_sha256);
  EXPECT_EQ(j.at("rows")[0].at("tokens").get<std::vector<int32_t>>(), ref.continuation);
  // Text needs a tokenizer, which a synthetic GGUF does not have: one line, exit 2.
  const auto t = Detverify({"generate", "--engine", "float", "--gguf", gguf, "--prompt", "hi"});
  EXPECT_EQ(t.code, 2);
  EXPECT_EQ(LineCount(t.err), 2u) << t.err;  // the dequantizing notice, then the error
  EXPECT_NE(t.err.find("tokenizer.ggml.model is missing (the file has no tokenizer)"),
            std::string::npos)
      << t.err;
  const auto bad =
      Detverify({"synth", "--format", "gguf", "--preset", "qwen3-tiny", "--out", gguf});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown synthetic GGUF preset 'qwen3-tiny' (known: llama-tiny, "
                         "smollm2-135m)"),
            std::string::npos)
      << bad.err;
  const auto fmt =
      Detverify({"synth", "--format", "onnx", "--preset", "llama-tiny", "--out", gguf});
  EXPECT_EQ(fmt.code, 2);
  EXPECT_NE(fmt.err.find("--format must be int, hf or gguf, not 'onnx'"), std::string::npos)
      << fmt.err;
}

TEST(GenerateFloatCli, UsageErrorsAreOneLine) {
  test_files::ScratchDir d("gencli");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--engine", "float", "--artifact", d.File("x")}, "--artifact is an int artifact"},
      {{"--engine", "float", "--hf", d.File("absent")}, "absent/config.json: cannot open"},
      {{"--engine", "float", "--preset", "qwen3-tiny", "--backend", "reference"},
       "the float engine runs on the cpu"},
      {{"--engine", "float", "--preset", "qwen3-tiny", "--dtype", "fp8"},
       "float dtype must be fp32, bf16 or fp16, not 'fp8'"},
      {{"--engine", "float", "--preset", "qwen3-tiny", "--backend", "cuda", "--dtype", "bf16"},
       "cuda"},
      {{"--engine", "fp32", "--preset", "qwen3-tiny"}, "--engine must be int8 or float"},
      {{"--preset", "qwen3-tiny", "--dtype", "bf16"}, "--dtype applies to --engine float"},
      {{"--hf", d.File("hf")}, "--hf is a float checkpoint: run it with --engine float"},
      {{"--preset", "qwen3-tiny", "--dump-logits", d.File("no/dir/x.npy")}, "cannot create"},
  };
  for (const auto& [extra, expected] : cases) {
    std::vector<std::string> args = {"generate", "--prompt-ids", "1,2", "--max-new", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = Detverify(args);
    EXPECT_EQ(r.code, 2) << expected;
    EXPECT_EQ(LineCount(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos)
        << "expected '" << expected << "' in " << r.err;
  }
}

}  // namespace
}  // namespace dv
