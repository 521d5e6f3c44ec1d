// The no-QK-Norm (Llama) variant, detllm-v1-llama (docs/SPEC.md §9), on an artifact prepared
// from the committed Llama GGUF fixture (tests/data/gguf/llama_tiny.gguf: 2 layers, 4 query / 2
// KV heads, head_dim 8, untied head) with the built-in calibration:
//   - the artifact says what it is (config.json qk_norm false, no QK-Norm tensors or shifts);
//   - the determinism the Qwen3 semantics have holds for it: on the reference backend, our row
//     alone, at every position of a batch with co-prompts, with split prefill and token by token
//     gives the same bits every step;
//   - the cpu backend at every ISA level and thread count gives the reference's bits every step.
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "gguf/gguf_checkpoint.h"
#include "prepare/calibration_set.h"
#include "prepare/prepare_artifact.h"
#include "tests/cpu_backend/cpu_bit_identity.h"
#include "tests/support/scratch_files.h"

namespace dv::test {
namespace {

// Removed at exit, after the artifact that maps files in it (see LlamaTiny).
std::string LlamaTinyDir() {
  static const test_files::ScratchDir dir("llama-tiny");
  return dir.Path().string();
}

const Artifact& LlamaTiny() {
  const std::string dir = LlamaTinyDir();  // the folder's owner first, so it outlives `a`
  static std::unique_ptr<Artifact> a;
  if (!a) {
    const auto checkpoint =
        gguf::OpenGgufCheckpoint(std::string(DV_SOURCE_ROOT) + "/tests/data/gguf/llama_tiny.gguf");
    PrepareOptions p;
    p.out_dir = dir;
    p.force = true;
    p.threads = 2;
    p.calibration = BuiltinCalibration(checkpoint->config().vocab, 4, 64);
    PrepareArtifact(*checkpoint, p);
    a = Artifact::Load(p.out_dir);
  }
  return *a;
}

const std::vector<int32_t> kPrompt = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9, 3};

TEST(LlamaVariant, TheArtifactSaysItHasNoQkNorm) {
  const Artifact& a = LlamaTiny();
  EXPECT_FALSE(a.weights().config.qk_norm);
  EXPECT_STREQ(SpecVersionOf(a.weights().config), "detllm-v1-llama");
  EXPECT_TRUE(a.weights().layers.at(0).q_norm_m.empty());
  std::ifstream in(LlamaTinyDir() + "/config.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  EXPECT_EQ(config.at("qk_norm"), false);
  EXPECT_FALSE(config.at("layers").at(0).contains("q_norm_k"));
  EXPECT_EQ(config.at("prepare").at("family"), "llama");
}

// The committed artifact of tests/engine/test_llama_golden.cc (whose chains the cross-ISA runs
// check) is what prepare writes from the GGUF: prepare is deterministic, so that fixture is
// this code's output, regenerable by its documented command.
TEST(LlamaVariant, PrepareWritesTheCommittedFixture) {
  const auto committed = Artifact::Load(test::DataDir() + "/llama/llama-tiny-int");
  EXPECT_EQ(LlamaTiny().sha256(), committed->sha256());
  EXPECT_EQ(LlamaTiny().config_sha256(), committed->config_sha256());
}

TEST(LlamaVariant, ReferencePathsGiveTheSoloBits) {
  const Artifact& a = LlamaTiny();
  const int64_t vocab = a.weights().config.vocab;
  const auto& solo = ReferenceResult("llama solo", a, {{kPrompt}, 24, 0});
  // The variant must not be trivially constant: the greedy tokens change along the way.
  std::set<int32_t> distinct(solo[0].tokens.begin(), solo[0].tokens.end());
  EXPECT_GT(distinct.size(), 2u);
  auto ref = MakeReferenceBackend();
  for (const int64_t split : {1, 5}) {
    ExpectSameSteps(solo, Generate(a, *ref, {{kPrompt}, 24, split}),
                    "split " + std::to_string(split));
  }
  for (const int64_t position : {0, 2, 5}) {
    const auto rows = Batch(kPrompt, 5, vocab, 11, position);
    const auto batch = Generate(a, *ref, {rows, 24, 0});
    ExpectSameSteps(solo, {batch[static_cast<size_t>(position)]},
                    "batch position " + std::to_string(position));
  }
}

class LlamaVariantCpu : public IsaTest {};

TEST_P(LlamaVariantCpu, EveryStepIsTheReferences) {
  const Artifact& a = LlamaTiny();
  const int64_t vocab = a.weights().config.vocab;
  ExpectEveryThreadCountMatches("llama", a, {{kPrompt}, 24, 0}, GetParam());
  ExpectEveryThreadCountMatches("llama batch 6 split", a, {Batch(kPrompt, 5, vocab, 7, 2), 16, 4},
                                GetParam());
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, LlamaVariantCpu, ::testing::ValuesIn(IsasUnderTest()),
                         IsaParamName);

}  // namespace
}  // namespace dv::test
