// The qwen3-0.6b synthetic checkpoint (1.5 GB, ~15 s to write): pinned bytes, label slow.
// Regenerate: detverify synth --preset qwen3-0.6b --seed 0 --format hf --out /tmp/p && sha256sum
// /tmp/p/*
#include <gtest/gtest.h>

#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_synth.h"
#include "engine/artifact.h"
#include "tests/support/scratch_files.h"

namespace dv {
namespace {

TEST(HfSynthSlow, PinnedBytes06b) {
  test_files::ScratchDir d("hfsynth06b");
  WriteHfSynthCheckpoint(FindHfSynthPreset("qwen3-0.6b"), 0, d.File("m"));
  EXPECT_EQ(Sha256FileHex(d.File("m/model.safetensors")),
            "e6af784ac81e72edde86570fbe2a82623d540baf9d7cd431678f14ca5439c4f4");
  EXPECT_EQ(Sha256FileHex(d.File("m/config.json")),
            "f63b79bf485f9fecd6316b678d0bbe22bc080ba3d51e8546918d70055c2fdc4f");
  const auto ckpt = OpenHfCheckpoint(d.File("m"));
  EXPECT_EQ(ckpt->weights().lm_head.shape, (std::vector<int64_t>{151936, 1024}));
}

}  // namespace
}  // namespace dv
