// The synthetic-model cache (engine/model_source.h) is verified before use: a cached file whose
// SHA-256 is not the one recorded at synthesis is never loaded; it is synthesized again.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/model_source.h"
#include "tests/support/scratch_files.h"

namespace dv {
namespace {

class SynthCache : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("DETVERIFY_CACHE", dir_.File("cache").c_str(), 1); }
  void TearDown() override { ::unsetenv("DETVERIFY_CACHE"); }

  static void FlipOneBit(const std::string& path, std::streamoff from_end) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-from_end, std::ios::end);
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x10);
    file.seekp(-from_end, std::ios::end);
    file.write(&byte, 1);
  }

  test_files::ScratchDir dir_{"synth-cache"};
};

TEST_F(SynthCache, BitFlippedModelIsNotUsed) {
  // The reported failure: a bit-flipped cached model was loaded silently and its hashes recorded
  // as those of "qwen3-tiny seed=0".
  const std::string genuine = LoadSynthetic("qwen3-tiny", 0)->sha256();
  const std::string folder = SyntheticCacheDir("qwen3-tiny", 0);
  ASSERT_TRUE(std::filesystem::exists(folder + "/SHA256SUMS"));
  FlipOneBit(folder + "/model.safetensors", 100);  // inside the last tensor's int8 data
  EXPECT_EQ(LoadSynthetic("qwen3-tiny", 0)->sha256(), genuine);
  // ...and the cache holds the genuine bytes again.
  EXPECT_EQ(LoadSynthetic("qwen3-tiny", 0)->sha256(), genuine);
}

TEST_F(SynthCache, EditedConfigIsNotUsed) {
  const std::string genuine = LoadSynthetic("qwen3-tiny", 0)->config_sha256();
  const std::string folder = SyntheticCacheDir("qwen3-tiny", 0);
  { std::ofstream(folder + "/config.json", std::ios::app) << " "; }
  EXPECT_EQ(LoadSynthetic("qwen3-tiny", 0)->config_sha256(), genuine);
}

TEST_F(SynthCache, CacheWithoutManifestIsRebuilt) {
  const std::string genuine = LoadSynthetic("qwen3-tiny", 0)->sha256();
  const std::string folder = SyntheticCacheDir("qwen3-tiny", 0);
  std::filesystem::remove(folder + "/SHA256SUMS");
  FlipOneBit(folder + "/model.safetensors", 7);
  EXPECT_EQ(LoadSynthetic("qwen3-tiny", 0)->sha256(), genuine);
  EXPECT_TRUE(std::filesystem::exists(folder + "/SHA256SUMS"));
}

}  // namespace
}  // namespace dv
