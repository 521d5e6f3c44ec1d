// Llama models from GGUF in Hugging Face terms, against transformers' GGUF loader: the tiny
// fixture's whole state_dict (tests/data/gguf/llama_tiny_hf.safetensors) and, when installed,
// SmolLM2-135M-Instruct's config and the sha256 of every tensor (smollm2_expected.json), both
// written by scripts/gguf/make_gguf_fixtures.py.
#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/safetensors.h"
#include "gguf/llama_model.h"
#include "gguf/model_cache.h"
#include "tests/gguf/gguf_builder.h"
#include "tests/support/smollm2.h"

namespace dv::gguf {
namespace {

using testing::GgufBuilder;

std::string DataPath(const std::string& name) {
  return std::string(DV_GGUF_TEST_DATA_DIR) + "/" + name;
}

std::string Sha256Hex(const void* data, size_t size) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(static_cast<const unsigned char*>(data), size, digest);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : digest) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// Float32 little-endian bytes, whatever the host.
std::vector<uint8_t> LeBytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v[i], 4);
    for (int b = 0; b < 4; ++b)
      out[4 * i + static_cast<size_t>(b)] = static_cast<uint8_t>(bits >> (8 * b));
  }
  return out;
}

TEST(LlamaModelTest, TinyConfigComesFromTheMetadata) {
  const LlamaModel m = LlamaModel::Open(DataPath("llama_tiny.gguf"));
  const LlamaConfig& c = m.config();
  EXPECT_EQ(c.name, "llama-tiny fixture");
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.intermediate_size, 64);
  EXPECT_EQ(c.vocab_size, 40);
  EXPECT_EQ(c.context_length, 128);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rms_norm_eps, static_cast<double>(1e-6f));
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_id, 2);
}

// Every tensor, un-permuted and dequantized, equals transformers' state_dict bit for bit.
TEST(LlamaModelTest, TinyTensorsMatchTransformersBitForBit) {
  const LlamaModel m = LlamaModel::Open(DataPath("llama_tiny.gguf"));
  const MappedFile expected_file = MappedFile::Open(DataPath("llama_tiny_hf.safetensors"));
  const auto expected = ParseSafetensors(expected_file.bytes(), "llama_tiny_hf.safetensors");
  ASSERT_EQ(m.TensorNames().size(), expected.size());
  for (const std::string& name : m.TensorNames()) {
    SCOPED_TRACE(name);
    const auto it = expected.find(name);
    ASSERT_NE(it, expected.end());
    ASSERT_EQ(it->second.dtype, DType::kF32);
    const FloatTensor t = m.Tensor(name);
    EXPECT_EQ(t.shape, it->second.shape);
    const std::vector<uint8_t> actual = LeBytes(t.data);
    ASSERT_EQ(actual.size(), it->second.bytes.size());
    EXPECT_EQ(std::memcmp(actual.data(), it->second.bytes.data(), actual.size()), 0);
  }
  EXPECT_EQ(m.TensorNames().front(), "model.embed_tokens.weight");
  EXPECT_EQ(m.TensorNames().back(), "lm_head.weight");
}

TEST(LlamaModelTest, NamesMapBothWays) {
  const LlamaModel m = LlamaModel::Open(DataPath("llama_tiny.gguf"));
  EXPECT_EQ(m.GgufName("model.layers.1.self_attn.q_proj.weight"), "blk.1.attn_q.weight");
  EXPECT_EQ(m.GgufName("model.layers.0.post_attention_layernorm.weight"), "blk.0.ffn_norm.weight");
  EXPECT_EQ(m.GgufName("lm_head.weight"), "output.weight");
  EXPECT_EQ(m.GgufName("model.layers.2.mlp.up_proj.weight"), "");   // only 2 layers
  EXPECT_EQ(m.GgufName("model.layers.01.mlp.up_proj.weight"), "");  // not a canonical number
  EXPECT_EQ(m.GgufName("model.layers.0.mlp.fc.weight"), "");
  try {
    m.Tensor("model.layers.7.mlp.up_proj.weight");
    FAIL();
  } catch (const GgufError& e) {
    EXPECT_EQ(std::string(e.what()), DataPath("llama_tiny.gguf") +
                                         ": no tensor model.layers.7.mlp.up_proj.weight in this "
                                         "Llama model");
  }
}

TEST(LlamaModelTest, RopeRowsInterleaveEachHeadsHalves) {
  // head_dim 6: HF rows 0 1 2 | 3 4 5 (the two halves) sit at GGUF rows 0 2 4 | 1 3 5.
  const int64_t expected[] = {0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11};
  for (int64_t hf_row = 0; hf_row < 12; ++hf_row) {
    EXPECT_EQ(GgufRopeRow(hf_row, 6), expected[hf_row]) << hf_row;
  }
}

TEST(LlamaModelTest, UnpermuteRestoresHalfSplitRows) {
  // One head of 4 rows: GGUF order (0, 2, 1, 3) of the HF rows -> back to 0, 1, 2, 3.
  const std::vector<float> gguf_rows = {0, 0, 2, 2, 1, 1, 3, 3};  // [4 rows, 2 cols]
  EXPECT_EQ(UnpermuteRopeRows(gguf_rows, 4, 2, 4), (std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3}));
  // Two heads of 2 rows each: nothing moves.
  EXPECT_EQ(UnpermuteRopeRows({5, 6}, 2, 1, 2), (std::vector<float>{5, 6}));
}

// A one-layer F32 Llama (hidden 4, 2 heads of 2, 1 KV head, intermediate 4, vocab 3) with one
// change applied, for the validation errors.
struct TinySpec {
  std::string drop_key;
  std::string drop_tensor;
  bool string_hidden = false;
  int32_t kv_heads = 1;
  std::string extra_tensor;
  std::string architecture = "llama";
  uint64_t q_rows = 4;
};

std::vector<uint8_t> TinyLlama(const TinySpec& s) {
  GgufBuilder b;
  const auto kv = [&](const std::string& key, auto add) {
    if (key != s.drop_key) add();
  };
  kv("general.architecture", [&] { b.String("general.architecture", s.architecture); });
  kv("llama.block_count", [&] { b.U32("llama.block_count", 1); });
  kv("llama.embedding_length", [&] {
    s.string_hidden ? b.String("llama.embedding_length", "4") : b.U32("llama.embedding_length", 4);
  });
  kv("llama.feed_forward_length", [&] { b.U32("llama.feed_forward_length", 4); });
  kv("llama.attention.head_count", [&] { b.U32("llama.attention.head_count", 2); });
  kv("llama.attention.head_count_kv", [&] { b.I32("llama.attention.head_count_kv", s.kv_heads); });
  kv("llama.context_length", [&] { b.U32("llama.context_length", 16); });
  kv("llama.attention.layer_norm_rms_epsilon",
     [&] { b.F32("llama.attention.layer_norm_rms_epsilon", 1e-5f); });
  const auto tensor = [&](const std::string& name, std::vector<uint64_t> dims) {
    if (name != s.drop_tensor) b.F32Tensor(name, std::move(dims));
  };
  tensor("token_embd.weight", {4, 3});
  tensor("blk.0.attn_q.weight", {4, s.q_rows});
  tensor("blk.0.attn_k.weight", {4, 2});
  tensor("blk.0.attn_v.weight", {4, 2});
  tensor("blk.0.attn_output.weight", {4, 4});
  tensor("blk.0.ffn_gate.weight", {4, 4});
  tensor("blk.0.ffn_up.weight", {4, 4});
  tensor("blk.0.ffn_down.weight", {4, 4});
  tensor("blk.0.attn_norm.weight", {4});
  tensor("blk.0.ffn_norm.weight", {4});
  tensor("output_norm.weight", {4});
  if (!s.extra_tensor.empty()) tensor(s.extra_tensor, {4});
  return b.Build();
}

// The error for the tiny model after `change`, or "" if it opens.
template <typename Change>
std::string LlamaError(Change change) {
  TinySpec spec;
  change(spec);
  try {
    const std::vector<uint8_t> bytes = TinyLlama(spec);
    LlamaModel::FromFile(GgufFile::FromBytes(bytes, "tiny.gguf"));
  } catch (const GgufError& e) {
    return e.what();
  }
  return "";
}

TEST(LlamaModelTest, ValidationErrorsNameTheFileAndTheProblem) {
  ASSERT_EQ(LlamaError([](TinySpec&) {}), "");
  const std::vector<uint8_t> tiny_bytes = TinyLlama(TinySpec());
  const LlamaModel tied = LlamaModel::FromFile(GgufFile::FromBytes(tiny_bytes, "tiny.gguf"));
  EXPECT_TRUE(tied.config().tie_word_embeddings);
  EXPECT_EQ(tied.config().head_dim, 2);
  EXPECT_EQ(tied.TensorNames().back(), "model.norm.weight");
  try {
    tied.Tensor("lm_head.weight");
    FAIL();
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("tied to model.embed_tokens.weight"), std::string::npos);
  }

  EXPECT_EQ(LlamaError([](TinySpec& s) { s.drop_key = "llama.block_count"; }),
            "tiny.gguf: metadata llama.block_count is missing");
  EXPECT_EQ(LlamaError([](TinySpec& s) { s.string_hidden = true; }),
            "tiny.gguf: metadata llama.embedding_length is a STRING, not an integer");
  EXPECT_EQ(LlamaError([](TinySpec& s) { s.kv_heads = 3; }),
            "tiny.gguf: llama.attention.head_count 2 is not a multiple of head_count_kv 3");
  EXPECT_EQ(LlamaError([](TinySpec& s) { s.kv_heads = -1; }),
            "tiny.gguf: metadata llama.attention.head_count_kv = -1 is outside [1, 4096]");
  EXPECT_EQ(LlamaError([](TinySpec& s) { s.architecture = "qwen3"; }),
            "tiny.gguf: architecture \"qwen3\" is not supported (only \"llama\")");
  EXPECT_EQ(LlamaError([](TinySpec& s) { s.drop_tensor = "blk.0.ffn_up.weight"; }),
            "tiny.gguf: tensor blk.0.ffn_up.weight is missing");
  EXPECT_EQ(LlamaError([](TinySpec& s) { s.q_rows = 6; }),
            "tiny.gguf: tensor blk.0.attn_q.weight has shape [6, 4], the config needs [4, 4]");
  EXPECT_EQ(LlamaError([](TinySpec& s) { s.extra_tensor = "rope_freqs.weight"; }),
            "tiny.gguf: unexpected tensor rope_freqs.weight (Llama 3.1 RoPE frequency scaling "
            "is not supported)");
}

// ---------------------------------------------------------------------------------------------
// SmolLM2-135M-Instruct, when installed (scripts/install_deps.sh --with-models).

nlohmann::json SmolLM2Expected() {
  std::ifstream in(DataPath("smollm2_expected.json"));
  return nlohmann::json::parse(in);
}

TEST(SmolLM2GgufTest, ConfigMatchesTransformers) {
  DV_REQUIRE_SMOLLM2(path);
  const LlamaModel m = LlamaModel::Open(path);
  const auto e = SmolLM2Expected()["config"];
  const LlamaConfig& c = m.config();
  EXPECT_EQ(c.hidden_size, e["hidden_size"].get<int64_t>());
  EXPECT_EQ(c.num_layers, e["num_hidden_layers"].get<int64_t>());
  EXPECT_EQ(c.num_heads, e["num_attention_heads"].get<int64_t>());
  EXPECT_EQ(c.num_kv_heads, e["num_key_value_heads"].get<int64_t>());
  EXPECT_EQ(c.head_dim, e["head_dim"].get<int64_t>());
  EXPECT_EQ(c.intermediate_size, e["intermediate_size"].get<int64_t>());
  EXPECT_EQ(c.vocab_size, e["vocab_size"].get<int64_t>());
  EXPECT_EQ(c.context_length, e["max_position_embeddings"].get<int64_t>());
  EXPECT_EQ(c.rope_theta, e["rope_theta"].get<double>());
  EXPECT_EQ(c.rms_norm_eps, e["rms_norm_eps"].get<double>());
  EXPECT_EQ(c.tie_word_embeddings, e["tie_word_embeddings"].get<bool>());
  EXPECT_EQ(c.bos_token_id, e["bos_token_id"].get<int64_t>());
  EXPECT_EQ(c.eos_token_id, e["eos_token_id"].get<int64_t>());
  // The numbers, stated independently of both readers.
  EXPECT_EQ(c.num_layers, 30);
  EXPECT_EQ(c.hidden_size, 576);
  EXPECT_EQ(c.num_heads, 9);
  EXPECT_EQ(c.num_kv_heads, 3);
  EXPECT_EQ(c.vocab_size, 49152);
}

TEST(SmolLM2GgufTest, EveryTensorMatchesTransformersBitForBit) {
  DV_REQUIRE_SMOLLM2(path);
  const LlamaModel m = LlamaModel::Open(path);
  const auto e = SmolLM2Expected()["tensors"];
  ASSERT_EQ(m.TensorNames().size(), e.size());
  int mismatches = 0;
  for (const std::string& name : m.TensorNames()) {
    ASSERT_TRUE(e.contains(name)) << name;
    const FloatTensor t = m.Tensor(name);
    EXPECT_EQ(t.shape, e[name]["shape"].get<std::vector<int64_t>>()) << name;
    const std::vector<uint8_t> bytes = LeBytes(t.data);
    if (Sha256Hex(bytes.data(), bytes.size()) != e[name]["sha256"].get<std::string>() &&
        ++mismatches <= 5) {
      ADD_FAILURE() << name << " differs from transformers' dequantized tensor";
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(SmolLM2GgufTest, FileIsThePinnedOne) {
  DV_REQUIRE_SMOLLM2(path);
  const MappedFile f = MappedFile::Open(path);
  EXPECT_EQ(Sha256Hex(f.bytes().data(), f.bytes().size()), kSmolLM2Sha256);
  EXPECT_EQ(SmolLM2Expected()["model_sha256"].get<std::string>(), kSmolLM2Sha256);
}

}  // namespace
}  // namespace dv::gguf
