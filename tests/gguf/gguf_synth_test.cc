// The synthetic Llama GGUFs of gguf/gguf_synth.h: the bytes of seed 0 are pinned (regenerate:
// `detverify synth --format gguf --preset P --seed 0 --out /tmp/p.gguf; sha256sum /tmp/p.gguf`);
// LlamaModel (checked against transformers' GGUF loader on tests/data/gguf/llama_tiny.gguf)
// reads each back as its preset's config with, under every Hugging Face name, exactly the values
// the synthetic Hugging Face checkpoint draws for that name: the q/k row permutation is undone
// by an independent reader. That transformers itself loads the file and computes the float64
// reference's logits is tests/data/float/llama-tiny-gguf.json (float_engine_test).
#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "checkpoint/half_float.h"
#include "checkpoint/hf_layout.h"
#include "checkpoint/hf_synth.h"
#include "engine/safetensors.h"
#include "gguf/gguf_synth.h"
#include "gguf/llama_model.h"
#include "tests/support/scratch_files.h"

namespace dv::gguf {
namespace {

namespace fs = std::filesystem;

// An empty folder's path (the writer creates it), removed with what is in it when the test ends,
// failed or not.
class Scratch {
 public:
  Scratch() { fs::remove(scratch_.Path()); }
  std::string Path() const { return scratch_.Path().string(); }

 private:
  test_files::ScratchDir scratch_{"gguf-synth"};
};

std::string FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  std::string hex;
  for (unsigned char c : digest) {
    hex += "0123456789abcdef"[c >> 4];
    hex += "0123456789abcdef"[c & 15];
  }
  return hex;
}

TEST(GgufSynth, SeedZeroBytesArePinned) {
  const Scratch scratch;
  const std::string dir = scratch.Path();
  const std::pair<const char*, const char*> pins[] = {
      {"llama-tiny", "ab4b4e6edd20a100dd44d177150e8632f3f850b29e67bb2172e139d17e979453"},
      {"smollm2-135m", "dbcb40125bddfa4b504a7e8d5a875b086f57890388d8a555194cf48c1f82de91"},
  };
  for (const auto& [preset, sha256] : pins) {
    const std::string path = dir + "/" + preset + ".gguf";  // the folder is created
    WriteSynthGguf(FindGgufSynthPreset(preset), 0, path);
    EXPECT_EQ(FileSha256(path), sha256) << preset;
    fs::remove(path);
  }
  // Nothing but the files themselves was left in the folder (the writes are atomic).
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(GgufSynth, ReadsBackAsThePresetWithTheHuggingFaceValues) {
  const Scratch scratch;
  const std::string dir = scratch.Path();
  const GgufSynthPreset& preset = FindGgufSynthPreset("llama-tiny");
  const FloatModelConfig& c = preset.config;
  const uint64_t seed = 5;
  WriteSynthGguf(preset, seed, dir + "/m.gguf");
  const LlamaModel model = LlamaModel::Open(dir + "/m.gguf");
  const LlamaConfig& got = model.config();
  EXPECT_EQ(got.name, "synthetic llama-tiny seed 5");
  EXPECT_EQ(got.num_layers, c.n_layers);
  EXPECT_EQ(got.hidden_size, c.hidden);
  EXPECT_EQ(got.num_heads, c.n_q_heads);
  EXPECT_EQ(got.num_kv_heads, c.n_kv_heads);
  EXPECT_EQ(got.head_dim, c.head_dim);
  EXPECT_EQ(got.intermediate_size, c.intermediate);
  EXPECT_EQ(got.vocab_size, c.vocab);
  EXPECT_EQ(got.context_length, c.max_pos);
  EXPECT_EQ(got.rope_theta, 1e4);
  EXPECT_EQ(got.rms_norm_eps, static_cast<double>(1e-5f));
  EXPECT_FALSE(got.tie_word_embeddings);
  EXPECT_EQ(got.bos_token_id, c.vocab - 2);
  EXPECT_EQ(got.eos_token_id, c.vocab - 1);

  const std::vector<HfTensorSpec> specs = HfTensorLayout(c);
  ASSERT_EQ(model.TensorNames().size(), specs.size());
  for (const HfTensorSpec& s : specs) {
    EXPECT_EQ(GgufTensorName(s.name), model.GgufName(s.name)) << s.name;
    const std::vector<uint8_t> bf16 = HfSynthTensorBf16(c, seed, s);
    const FloatTensor t = model.Tensor(s.name);
    ASSERT_EQ(t.shape, s.shape) << s.name;
    ASSERT_EQ(t.data.size() * 2, bf16.size()) << s.name;
    size_t differ = 0;
    for (size_t i = 0; i < t.data.size(); ++i) {
      const auto bits = static_cast<uint16_t>(bf16[2 * i] | (bf16[2 * i + 1] << 8));
      differ += t.data[i] != Bf16BitsToFloat(bits) ? size_t{1} : size_t{0};
    }
    EXPECT_EQ(differ, 0u) << s.name << ": values differ from the Hugging Face checkpoint's";
  }
}

TEST(GgufSynth, SeedsDiffer) {
  const Scratch scratch;
  const std::string dir = scratch.Path();
  const GgufSynthPreset& preset = FindGgufSynthPreset("llama-tiny");
  WriteSynthGguf(preset, 0, dir + "/a.gguf");
  WriteSynthGguf(preset, 1, dir + "/b.gguf");
  EXPECT_NE(FileSha256(dir + "/a.gguf"), FileSha256(dir + "/b.gguf"));
}

TEST(GgufSynth, NamesMapAsLlamaCppNamesThem) {
  EXPECT_EQ(GgufTensorName("model.embed_tokens.weight"), "token_embd.weight");
  EXPECT_EQ(GgufTensorName("model.norm.weight"), "output_norm.weight");
  EXPECT_EQ(GgufTensorName("lm_head.weight"), "output.weight");
  EXPECT_EQ(GgufTensorName("model.layers.12.self_attn.k_proj.weight"), "blk.12.attn_k.weight");
  EXPECT_EQ(GgufTensorName("model.layers.0.post_attention_layernorm.weight"),
            "blk.0.ffn_norm.weight");
  EXPECT_EQ(GgufTensorName("model.layers.0.self_attn.q_norm.weight"), "");
  EXPECT_EQ(GgufTensorName("model.layers.3"), "");
  EXPECT_EQ(GgufTensorName("model.layers.03.mlp.up_proj.weight"), "");  // not a canonical number
}

TEST(GgufSynth, UnknownPresetNamesTheKnownOnes) {
  try {
    FindGgufSynthPreset("qwen3-tiny");
    FAIL() << "no error";
  } catch (const ArtifactError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown synthetic GGUF preset 'qwen3-tiny' (known: llama-tiny, smollm2-135m)");
  }
}

}  // namespace
}  // namespace dv::gguf
