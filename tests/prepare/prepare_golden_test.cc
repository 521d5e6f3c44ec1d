// The same checkpoint and calibration give the same artifact bytes on every machine: the
// synthetic checkpoints prepared with the built-in calibration at every GEMM level this machine
// has (x86-64: baseline, AVX2, AVX-512) must give the SHA-256 pinned here, which every x86-64
// level, aarch64 and big-endian s390x (scripts/cross_test.sh, under qemu) reproduce.
//
// Regenerate after a deliberate change of the recipe, the calibration forward or the synthetic
// checkpoints (then say why in the commit): run this test and take the values it prints, or
//   detverify synth --format hf --preset P --out /tmp/P
//   detverify prepare --hf /tmp/P --out /tmp/P-int8 --model-id P
#include <gtest/gtest.h>

#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_synth.h"
#include "engine/artifact.h"
#include "prepare/prepare_artifact.h"
#include "tests/support/scratch_files.h"

namespace dv {
namespace {

struct Pin {
  const char* preset;
  const char* model_safetensors;
  const char* config_json;
};

const Pin kPins[] = {
    {"qwen3-tiny", "d9b6b5228f8679aeb1598bd3364a7078dfbc0285ba24b30a199797d17f4ec8bd",
     "fa7b5cfee31c0cb75b83b2753555d1c446b35e5f8a10b9c8dfa9083098ffea90"},
    {"qwen3-tiny-hd128", "506dc6a1a2cbe567c8738025dd17fcd251a80e3e4c20460ef82a89b7d16c9cda",
     "dc7e305eb5cb9ff82d95a0c676233d89ccdfdd8d816cb13c150866517c17cb67"},
};

void PrintTo(const Pin& p, std::ostream* os) { *os << p.preset; }

class PreparedSynthetic : public ::testing::TestWithParam<Pin> {};

TEST_P(PreparedSynthetic, SameBytesAtEveryGemmLevel) {
  const Pin& pin = GetParam();
  test_files::ScratchDir scratch("prepare-golden");
  const std::string hf = scratch.File("hf");
  WriteHfSynthCheckpoint(FindHfSynthPreset(pin.preset), 0, hf);
  const auto checkpoint = OpenHfCheckpoint(hf);
  for (GemmIsa isa : SupportedGemmIsas()) {
    PrepareOptions o;
    o.out_dir = scratch.File(std::string("int8-") + GemmIsaName(isa));
    o.calibration =
        BuiltinCalibration(checkpoint->config().vocab, kBuiltinCalibSamples, kBuiltinCalibLen);
    o.recipe.model_id = pin.preset;
    o.isa = isa;
    o.threads = 2;
    const PrepareResult r = PrepareArtifact(*checkpoint, o);
    EXPECT_EQ(r.sha256, pin.model_safetensors) << pin.preset << " at " << GemmIsaName(isa);
    EXPECT_EQ(r.config_sha256, pin.config_json) << pin.preset << " at " << GemmIsaName(isa);
    EXPECT_EQ(r.rope_sensitive_entries, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, PreparedSynthetic, ::testing::ValuesIn(kPins), [](const auto& p) {
  std::string n = p.param.preset;
  for (char& c : n) c = c == '-' || c == '.' ? '_' : c;
  return n;
});

}  // namespace
}  // namespace dv
