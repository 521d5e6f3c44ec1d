// Synthetic Hugging Face checkpoints: pinned bytes (integer code only, so the same on every
// platform), the structure they promise (gamma and input-column outliers x10-x30), and that the
// reader accepts them. The pins change only with the generator; regenerate with
//   detverify synth --preset P --seed 0 --format hf --out /tmp/p && sha256sum /tmp/p/*
// (scripts/float_engine/make_float_reference.py then refreshes tests/data/float).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_synth.h"
#include "engine/artifact.h"
#include "tests/support/scratch_files.h"

namespace dv {
namespace {

struct Pin {
  const char* preset;
  const char* model_sha256;
  const char* config_sha256;
};

constexpr Pin kTiny = {"qwen3-tiny",
                       "ee6e123e55bd576dce4437e82a9480f64d8a9fd798414bddf0fadd6ebd757e0f",
                       "366e991ed8f2e9a77b92e9121c9e2d26508a3e1524ee2627b1dd0a1a532339a7"};
constexpr Pin kHd128 = {"qwen3-tiny-hd128",
                        "bc52e3d65372939dc206b6854aa733cdd548692338ee231d64cf40ace01fa9cc",
                        "7d6a72b6ff91da72dc1a4cdd5f442c2381c982bdcab152a3e487053e80dae188"};
// qwen3-0.6b: synthesized and checked in hf_synth_slow_test.cc (label slow); here only its pin
// in the code is compared.
constexpr Pin k06b = {"qwen3-0.6b",
                      "e6af784ac81e72edde86570fbe2a82623d540baf9d7cd431678f14ca5439c4f4",
                      "f63b79bf485f9fecd6316b678d0bbe22bc080ba3d51e8546918d70055c2fdc4f"};

void ExpectPinned(const Pin& pin) {
  test_files::ScratchDir d("hfsynth");
  WriteHfSynthCheckpoint(FindHfSynthPreset(pin.preset), 0, d.File("m"));
  EXPECT_EQ(Sha256FileHex(d.File("m/model.safetensors")), pin.model_sha256) << pin.preset;
  EXPECT_EQ(Sha256FileHex(d.File("m/config.json")), pin.config_sha256) << pin.preset;
  const auto ckpt = OpenHfCheckpoint(d.File("m"));
  EXPECT_EQ(ckpt->ContentSha256(), pin.model_sha256);
  EXPECT_EQ(ckpt->config().n_layers, FindHfSynthPreset(pin.preset).config.n_layers);
}

TEST(HfSynth, PinnedBytesTiny) { ExpectPinned(kTiny); }
TEST(HfSynth, PinnedBytesHeadDim128) { ExpectPinned(kHd128); }

TEST(HfSynth, ShapesOfThePresets) {
  const FloatModelConfig& tiny = FindHfSynthPreset("qwen3-tiny").config;
  EXPECT_EQ(tiny.n_q_heads / tiny.n_kv_heads, 2) << "grouped-query attention";
  const FloatModelConfig& hd = FindHfSynthPreset("qwen3-tiny-hd128").config;
  EXPECT_EQ(hd.head_dim, 128);
  EXPECT_GT(hd.n_q_heads, hd.n_kv_heads);
  const FloatModelConfig& q = FindHfSynthPreset("qwen3-0.6b").config;
  EXPECT_EQ(q.hidden, 1024);
  EXPECT_EQ(q.n_layers, 28);
  EXPECT_EQ(q.head_dim, 128);
  EXPECT_EQ(q.vocab, 151936);
  EXPECT_EQ(q.eos_token_ids, std::vector<int64_t>{151645});
  try {
    FindHfSynthPreset("qwen3-7b");
    ADD_FAILURE() << "an unknown preset was found";
  } catch (const ArtifactError& e) {  // an expected failure (exit 2), as the int presets'
    EXPECT_NE(std::string(e.what()).find("unknown synthetic preset 'qwen3-7b' (known: qwen3-tiny"),
              std::string::npos)
        << e.what();
  }
}

TEST(HfSynth, OutlierChannelsAndColumns) {
  test_files::ScratchDir d("hfsynth");
  WriteHfSynthCheckpoint(FindHfSynthPreset("qwen3-tiny-hd128"), 3, d.File("m"));
  const auto ckpt = OpenHfCheckpoint(d.File("m"));
  const FloatWeights& w = ckpt->weights();
  // RMSNorm gammas: in [0.7, 1.3] but for the same 2 channels in every layer, x10-x30.
  std::vector<size_t> first;
  for (const FloatLayerWeights& l : w.layers) {
    for (const FloatTensor* t : {&l.input_norm, &l.post_norm}) {
      const std::vector<double> g = ReadFloat64(*t);
      std::vector<size_t> big;
      for (size_t i = 0; i < g.size(); ++i) {
        if (g[i] > 1.3) {
          big.push_back(i);
          EXPECT_GE(g[i], 0.7 * 10 - 0.1);
          EXPECT_LE(g[i], 1.3 * 30 + 0.5);
        } else {
          EXPECT_GE(g[i], 0.69);
        }
      }
      EXPECT_EQ(big.size(), 2u) << t->name;
      if (first.empty()) first = big;
      EXPECT_EQ(big, first) << "the same channels in every layer";
    }
  }
  // o_proj and down_proj: a few input columns whose largest entry is ~10-30x the others'.
  for (const FloatTensor* t : {&w.layers[0].o, &w.layers[1].down}) {
    const std::vector<double> v = ReadFloat64(*t);
    const int64_t rows = t->shape[0], cols = t->shape[1];
    std::vector<double> col_max(static_cast<size_t>(cols), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        col_max[static_cast<size_t>(c)] = std::max(col_max[static_cast<size_t>(c)],
                                                   std::abs(v[static_cast<size_t>(r * cols + c)]));
      }
    }
    std::vector<double> sorted = col_max;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    const auto outliers =
        std::count_if(col_max.begin(), col_max.end(), [&](double m) { return m > 5 * median; });
    EXPECT_EQ(outliers, std::max<int64_t>(2, cols / 512)) << t->name;
  }
}

TEST(HfSynth, CachedSyntheticOpensTheSameBytes) {
  const auto ckpt = OpenHfSynthetic("qwen3-tiny", 0);
  EXPECT_EQ(ckpt->ContentSha256(), kTiny.model_sha256);
  EXPECT_NE(ckpt->source().find("/synthetic-hf/qwen3-tiny-seed0"), std::string::npos);
}

// The cache is checked before use: a cached file altered after synthesis is noticed (against the
// pin for seed 0, against the sha256sums written at synthesis for other seeds) and written again.
class HfSynthCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* c = std::getenv("DETVERIFY_CACHE")) old_ = c;
    ::setenv("DETVERIFY_CACHE", cache_.Path().c_str(), 1);
  }
  void TearDown() override {
    if (old_.empty()) {
      ::unsetenv("DETVERIFY_CACHE");
    } else {
      ::setenv("DETVERIFY_CACHE", old_.c_str(), 1);
    }
  }
  static void FlipLastByte(const std::string& path) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    const char c = static_cast<char>(f.get() ^ 1);
    f.seekp(-1, std::ios::end);
    f.put(c);
  }
  static void Notice(const std::string&, const std::string& why) { notices.push_back(why); }
  static inline std::vector<std::string> notices;
  test_files::ScratchDir cache_{"hfcache"};
  std::string old_;
};

TEST_F(HfSynthCache, AlteredPinnedCacheIsWrittenAgain) {
  notices.clear();
  const std::string dir = HfSyntheticCacheDir("qwen3-tiny", 0);
  OpenHfSynthetic("qwen3-tiny", 0, Notice);
  ASSERT_EQ(notices, std::vector<std::string>{"absent"});
  EXPECT_EQ(HfSynthCacheProblem("qwen3-tiny", 0, dir), "");
  OpenHfSynthetic("qwen3-tiny", 0, Notice);
  EXPECT_EQ(notices.size(), 1u);  // verified, used as it is

  FlipLastByte(dir + "/model.safetensors");
  EXPECT_NE(HfSynthCacheProblem("qwen3-tiny", 0, dir).find("not the pinned"), std::string::npos);
  const auto ckpt = OpenHfSynthetic("qwen3-tiny", 0, Notice);
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_NE(notices[1].find("model.safetensors has SHA-256"), std::string::npos) << notices[1];
  EXPECT_EQ(ckpt->ContentSha256(), kTiny.model_sha256);
  // Even a matching sha256sums does not vouch for a seed-0 folder: the pin does.
  const std::string listing = Sha256FileHex(dir + "/model.safetensors") + "  model.safetensors\n" +
                              Sha256FileHex(dir + "/config.json") + "  config.json\n";
  FlipLastByte(dir + "/config.json");
  test_files::WriteFile(dir + "/sha256sums", listing);
  EXPECT_NE(HfSynthCacheProblem("qwen3-tiny", 0, dir).find("config.json"), std::string::npos);
}

TEST_F(HfSynthCache, OtherSeedsAreCheckedAgainstTheirListing) {
  notices.clear();
  const std::string dir = HfSyntheticCacheDir("qwen3-tiny", 7);
  const std::string first = OpenHfSynthetic("qwen3-tiny", 7, Notice)->ContentSha256();
  EXPECT_NE(first, kTiny.model_sha256);
  EXPECT_NE(test_files::ReadFile(dir + "/sha256sums").find(first + "  model.safetensors\n"),
            std::string::npos);
  EXPECT_EQ(HfSynthCacheProblem("qwen3-tiny", 7, dir), "");

  FlipLastByte(dir + "/model.safetensors");
  EXPECT_NE(HfSynthCacheProblem("qwen3-tiny", 7, dir).find("recorded in sha256sums"),
            std::string::npos);
  EXPECT_EQ(OpenHfSynthetic("qwen3-tiny", 7, Notice)->ContentSha256(), first);

  std::filesystem::remove(dir + "/sha256sums");
  EXPECT_EQ(HfSynthCacheProblem("qwen3-tiny", 7, dir), "it has no sha256sums listing both files");
  EXPECT_EQ(OpenHfSynthetic("qwen3-tiny", 7, Notice)->ContentSha256(), first);
  EXPECT_EQ(notices.size(), 3u);
  EXPECT_EQ(HfSynthCacheProblem("qwen3-tiny", 7, dir), "");
}

TEST(HfSynth, PinsInTheCodeAreTheTestsPins) {
  for (const Pin& pin : {kTiny, kHd128, k06b}) {
    const auto d = PinnedHfSynthDigests(pin.preset, 0);
    ASSERT_TRUE(d.has_value()) << pin.preset;
    EXPECT_EQ(d->model_sha256, pin.model_sha256);
    EXPECT_EQ(d->config_sha256, pin.config_sha256);
  }
  EXPECT_FALSE(PinnedHfSynthDigests("qwen3-tiny", 1).has_value());
}

}  // namespace
}  // namespace dv
