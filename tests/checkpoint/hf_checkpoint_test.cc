// The Hugging Face checkpoint reader: what it accepts (single file and shards; BF16, F16, F32;
// tied heads with and without Qwen3-0.6B's redundant lm_head; DetLLM's p-small checkpoint) and
// that every malformed folder is one ArtifactError line naming the file and the tensor.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "checkpoint/hf_checkpoint.h"
#include "engine/artifact.h"
#include "tests/checkpoint/hf_test_folders.h"

namespace dv {
namespace {

using test::FolderSpec;
using test_files::ScratchDir;

// The one-line error of opening `dir`, or "" when it opens.
std::string OpenError(const std::string& dir) {
  try {
    OpenHfCheckpoint(dir);
  } catch (const ArtifactError& e) {
    return e.what();
  }
  return "";
}

std::string ErrorOf(const FolderSpec& spec) {
  ScratchDir d("hf");
  test::WriteHfFolder(d.File("m"), spec);
  const std::string e = OpenError(d.File("m"));
  EXPECT_EQ(e.find('\n'), std::string::npos) << "not one line: " << e;
  return e;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(HfCheckpoint, ReadsEveryTensorInEachFloatDType) {
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    ScratchDir d("hf");
    FolderSpec spec;
    spec.dtype = dtype;
    test::WriteHfFolder(d.File("m"), spec);
    const auto ckpt = OpenHfCheckpoint(d.File("m"));
    const FloatWeights& w = ckpt->weights();
    EXPECT_EQ(w.layers.size(), 2u);
    EXPECT_EQ(w.layers[1].q.shape, (std::vector<int64_t>{8, 8}));
    EXPECT_EQ(w.layers[1].k.shape, (std::vector<int64_t>{4, 8}));
    EXPECT_EQ(w.layers[0].down.shape, (std::vector<int64_t>{8, 12}));
    ASSERT_TRUE(w.layers[0].q_norm.has_value());
    EXPECT_EQ(w.layers[0].q_norm->shape, (std::vector<int64_t>{4}));
    EXPECT_FALSE(w.layers[0].q_bias.has_value());
    EXPECT_EQ(w.lm_head.name, "lm_head.weight");
    EXPECT_EQ(w.lm_head.dtype, dtype);
    // Decoded exactly, in float and double.
    const std::vector<double> v = ReadFloat64(w.layers[1].gate);
    ASSERT_EQ(v.size(), 12u * 8u);
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], test::kPattern[i % 7]) << i;
    std::vector<float> row(8);
    DecodeFloat32(w.embed, 3 * 8, row);
    for (size_t i = 0; i < row.size(); ++i) EXPECT_EQ(row[i], test::kPattern[(24 + i) % 7]);
    EXPECT_EQ(ckpt->ContentSha256(), Sha256FileHex(d.File("m/model.safetensors")));
  }
}

TEST(HfCheckpoint, FirstNonFiniteFindsNanAndInfinityInEachDType) {
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    TensorData data = test::PatternTensor(dtype, {4, 4});
    FloatTensor t;
    t.name = "w";
    t.dtype = dtype;
    t.shape = {4, 4};
    t.bytes = data.bytes;
    EXPECT_FALSE(FirstNonFinite(t).has_value());
    const size_t size = static_cast<size_t>(DTypeSize(dtype));
    // Element 9 := +infinity, element 13 := NaN (exponent all ones; the largest finite value is
    // not flagged).
    const uint32_t inf = dtype == DType::kF32    ? 0x7f800000u
                         : dtype == DType::kBF16 ? 0x7f80u
                                                 : 0x7c00u;
    const uint32_t max_finite = dtype == DType::kF32    ? 0x7f7fffffu
                                : dtype == DType::kBF16 ? 0x7f7fu
                                                        : 0x7bffu;
    auto put = [&](size_t i, uint32_t bits) {
      for (size_t b = 0; b < size; ++b)
        data.bytes[i * size + b] = static_cast<uint8_t>(bits >> (8 * b));
    };
    put(5, max_finite);
    EXPECT_FALSE(FirstNonFinite(t).has_value());
    put(13, inf | 1u);
    EXPECT_EQ(FirstNonFinite(t), 13);
    put(9, inf);
    EXPECT_EQ(FirstNonFinite(t), 9);
  }
}

TEST(HfCheckpoint, TiedEmbeddingsWithAndWithoutTheRedundantHead) {
  FolderSpec spec;
  spec.config.tie_word_embeddings = true;
  for (bool redundant : {false, true}) {
    spec.lm_head_beside_tied = redundant;
    ScratchDir d("hf");
    test::WriteHfFolder(d.File("m"), spec);
    const auto ckpt = OpenHfCheckpoint(d.File("m"));
    const FloatWeights& w = ckpt->weights();
    EXPECT_EQ(w.lm_head.name, "model.embed_tokens.weight") << "the head follows the embedding";
    EXPECT_EQ(w.lm_head.bytes.data(), w.embed.bytes.data());
    EXPECT_EQ(ckpt->ignored_lm_head(), redundant);
  }
  // A redundant head must still have the head's shape.
  spec.lm_head_beside_tied = true;
  spec.reshape["lm_head.weight"] = {16, 7};
  const std::string e = ErrorOf(spec);
  EXPECT_TRUE(Contains(e,
                       "model.safetensors: tensor 'lm_head.weight' has shape [16, 7], "
                       "config.json needs [16, 8]"))
      << e;
}

TEST(HfCheckpoint, Shards) {
  ScratchDir d("hf");
  FolderSpec spec;
  spec.shards = 3;
  test::WriteHfFolder(d.File("m"), spec);
  const auto ckpt = OpenHfCheckpoint(d.File("m"));
  EXPECT_EQ(ckpt->weight_files().size(), 3u);
  EXPECT_EQ(ckpt->weights().layers[1].up.shape, (std::vector<int64_t>{12, 8}));
  // Identity: the SHA-256 of the shards' sha256sum listing.
  std::string listing;
  for (int i = 1; i <= 3; ++i) {
    const std::string name = "model-0000" + std::to_string(i) + "-of-00003.safetensors";
    listing += Sha256FileHex(d.File("m/" + name)) + "  " + name + "\n";
  }
  EXPECT_EQ(ckpt->ContentSha256(),
            Sha256Hex({reinterpret_cast<const uint8_t*>(listing.data()), listing.size()}));
}

TEST(HfCheckpoint, ShardIndexErrors) {
  ScratchDir d("hf");
  FolderSpec spec;
  spec.shards = 2;
  const std::string m = d.File("m");
  test::WriteHfFolder(m, spec);
  const std::string index_path = m + "/model.safetensors.index.json";
  const auto index = nlohmann::json::parse(test_files::ReadFile(index_path));
  auto with_index = [&](const nlohmann::json& j) {
    test_files::WriteFile(index_path, j.dump());
    return OpenError(m);
  };
  {  // a tensor the index places in the other shard
    auto j = index;
    j["weight_map"]["model.norm.weight"] =
        j["weight_map"]["model.norm.weight"] == "model-00001-of-00002.safetensors"
            ? "model-00002-of-00002.safetensors"
            : "model-00001-of-00002.safetensors";
    const std::string e = with_index(j);
    EXPECT_TRUE(Contains(e, "tensor 'model.norm.weight'")) << e;
  }
  {  // a shard outside the folder
    auto j = index;
    j["weight_map"]["model.norm.weight"] = "../model.safetensors";
    const std::string e = with_index(j);
    EXPECT_TRUE(Contains(e, "model.safetensors.index.json: shard name \"../model.safetensors\""))
        << e;
  }
  {  // a shard that does not exist
    auto j = index;
    j["weight_map"]["model.norm.weight"] = "model-00003-of-00002.safetensors";
    const std::string e = with_index(j);
    EXPECT_TRUE(Contains(e, "model-00003-of-00002.safetensors: cannot open")) << e;
  }
  {  // a tensor in a shard the index does not list
    auto j = index;
    j["weight_map"].erase("model.norm.weight");
    const std::string e = with_index(j);
    EXPECT_TRUE(Contains(e, "tensor 'model.norm.weight' is not in model.safetensors.index.json"))
        << e;
  }
  EXPECT_TRUE(Contains(with_index(nlohmann::json::array()), "needs a \"weight_map\" object"));
  test_files::WriteFile(index_path, "{\"weight_map\": ");
  EXPECT_TRUE(Contains(OpenError(m), "model.safetensors.index.json:1: malformed JSON"));
}

TEST(HfCheckpoint, MissingExtraWrongShapeWrongDType) {
  {
    FolderSpec spec;
    spec.drop = {"model.layers.1.mlp.up_proj.weight"};
    const std::string e = ErrorOf(spec);
    EXPECT_TRUE(Contains(e,
                         "/model.safetensors: missing tensor 'model.layers.1.mlp.up_proj.weight' "
                         "(config.json: 2 layers, qwen3)"))
        << e;
  }
  {
    FolderSpec spec;
    spec.drop = {"lm_head.weight"};
    EXPECT_TRUE(Contains(ErrorOf(spec), "missing tensor 'lm_head.weight'"));
  }
  {
    FolderSpec spec;
    spec.extra["model.layers.2.mlp.up_proj.weight"] = test::PatternTensor(DType::kBF16, {12, 8});
    const std::string e = ErrorOf(spec);
    EXPECT_TRUE(Contains(e,
                         "unexpected tensor 'model.layers.2.mlp.up_proj.weight' (not part of a "
                         "qwen3 model with this config.json)"))
        << e;
  }
  {
    FolderSpec spec;
    spec.reshape["model.layers.0.self_attn.k_proj.weight"] = {8, 8};
    const std::string e = ErrorOf(spec);
    EXPECT_TRUE(Contains(e,
                         "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [8, 8], "
                         "config.json needs [4, 8]"))
        << e;
  }
  for (DType bad : {DType::kI8, DType::kI32, DType::kF64}) {
    FolderSpec spec;
    spec.retype["model.layers.0.self_attn.q_norm.weight"] = bad;
    const std::string e = ErrorOf(spec);
    EXPECT_TRUE(
        Contains(e, std::string("tensor 'model.layers.0.self_attn.q_norm.weight' has dtype ") +
                        DTypeName(bad) + "; a float checkpoint holds BF16, F16 or F32"))
        << e;
  }
  {  // Llama: no QK-Norm, so the Qwen3 q/k norms are unexpected
    FolderSpec spec;
    ScratchDir d("hf");
    test::WriteHfFolder(d.File("m"), spec);
    auto cfg = nlohmann::json::parse(test_files::ReadFile(d.File("m/config.json")));
    cfg["model_type"] = "llama";
    cfg["architectures"] = {"LlamaForCausalLM"};
    test_files::WriteFile(d.File("m/config.json"), cfg.dump());
    EXPECT_TRUE(Contains(OpenError(d.File("m")),
                         "unexpected tensor 'model.layers.0.self_attn.k_norm.weight'"));
  }
}

TEST(HfCheckpoint, MixedDTypesAndIgnoredRotaryBuffers) {
  FolderSpec spec;
  spec.retype["model.norm.weight"] = DType::kF32;
  spec.retype["model.layers.0.mlp.down_proj.weight"] = DType::kF16;
  spec.extra["model.layers.0.self_attn.rotary_emb.inv_freq"] =
      test::PatternTensor(DType::kF32, {2});
  ScratchDir d("hf");
  test::WriteHfFolder(d.File("m"), spec);
  const auto ckpt = OpenHfCheckpoint(d.File("m"));
  EXPECT_EQ(ckpt->weights().final_norm.dtype, DType::kF32);
  EXPECT_EQ(ckpt->weights().layers[0].down.dtype, DType::kF16);
  EXPECT_EQ(ReadFloat64(ckpt->weights().layers[0].down)[5], test::kPattern[5]);
}

TEST(HfCheckpoint, AttentionBiases) {
  FolderSpec spec;
  spec.config.attention_bias = true;
  ScratchDir d("hf");
  test::WriteHfFolder(d.File("m"), spec);
  const auto ckpt = OpenHfCheckpoint(d.File("m"));
  ASSERT_TRUE(ckpt->weights().layers[1].o_bias.has_value());
  EXPECT_EQ(ckpt->weights().layers[1].o_bias->shape, (std::vector<int64_t>{8}));
  EXPECT_EQ(ckpt->weights().layers[1].k_bias->shape, (std::vector<int64_t>{4}));
  spec.drop = {"model.layers.1.self_attn.v_proj.bias"};
  EXPECT_TRUE(Contains(ErrorOf(spec), "missing tensor 'model.layers.1.self_attn.v_proj.bias'"));
}

TEST(HfCheckpoint, HostileFolders) {
  ScratchDir d("hf");
  const std::string m = d.File("m");
  EXPECT_TRUE(Contains(OpenError(d.File("absent")), "absent/config.json: cannot open"));
  test::WriteHfFolder(m, FolderSpec{});
  const std::string model = m + "/model.safetensors";
  const std::string bytes = test_files::ReadFile(model);
  // Truncated weights.
  test_files::WriteFile(model, bytes.substr(0, bytes.size() - 3));
  EXPECT_TRUE(Contains(OpenError(m), "model.safetensors: tensor '")) << OpenError(m);
  test_files::WriteFile(model, bytes.substr(0, 5));
  EXPECT_TRUE(Contains(OpenError(m), "model.safetensors: truncated"));
  // A folder, a FIFO instead of a file: refused, never a hang.
  std::filesystem::remove(model);
  std::filesystem::create_directory(model);
  EXPECT_TRUE(Contains(OpenError(m), "model.safetensors")) << OpenError(m);
  std::filesystem::remove(model);
  ASSERT_EQ(::mkfifo(model.c_str(), 0600), 0);
  EXPECT_TRUE(Contains(OpenError(m), "model.safetensors: a FIFO, not a regular file"))
      << OpenError(m);
  std::filesystem::remove(model);
  EXPECT_TRUE(Contains(OpenError(m), "no model.safetensors or model.safetensors.index.json"));
  test_files::WriteFile(model, bytes);
  const std::string config = m + "/config.json";
  std::filesystem::remove(config);
  ASSERT_EQ(::mkfifo(config.c_str(), 0600), 0);
  EXPECT_TRUE(Contains(OpenError(m), "config.json: a FIFO, not a regular file")) << OpenError(m);
  std::filesystem::remove(config);
  test_files::WriteFile(config, "{\"model_type\": \"qwen3\", \"hidden_size\": 8}");
  EXPECT_TRUE(Contains(OpenError(m), "config.json: missing key \"num_hidden_layers\""));
}

// DetLLM's p-small float checkpoint (shared/detllm/prepare): transformers' names, tied, BF16,
// rope_theta written as an integer.
TEST(HfCheckpoint, DetllmPSmall) {
  const char* shared = std::getenv("DETVERIFY_SHARED_DIR");
  const std::string dir = std::string(shared ? shared : "../shared") + "/detllm/prepare/p-small/hf";
  if (!IsHfCheckpointDir(dir)) GTEST_SKIP() << dir << " not present";
  const auto ckpt = OpenHfCheckpoint(dir);
  const FloatModelConfig& c = ckpt->config();
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.hidden, 128);
  EXPECT_EQ(c.n_q_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.intermediate, 256);
  EXPECT_EQ(c.vocab, 512);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{511});
  EXPECT_EQ(ckpt->weights().lm_head.bytes.data(), ckpt->weights().embed.bytes.data());
  EXPECT_EQ(ckpt->weights().embed.dtype, DType::kBF16);
}

}  // namespace
}  // namespace dv
