// config.json as transformers writes it: both layouts (4.x as the published Qwen3 checkpoints,
// 5.x with rope_parameters), int or float numbers, transformers' defaults, and a one-line error
// for everything the float engine would not compute as transformers does.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "checkpoint/hf_config.h"
#include "engine/safetensors.h"

namespace dv {
namespace {

// Qwen3-0.6B's config.json as published (transformers 4.51).
const char* kQwen306B = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

std::string ErrorOf(const nlohmann::json& j) {
  try {
    ParseHfConfig(j.dump(), "m/config.json");
  } catch (const ArtifactError& e) {
    return e.what();
  }
  return "";
}

nlohmann::json With(const char* key, const nlohmann::json& value) {
  auto j = nlohmann::json::parse(kQwen306B);
  if (value.is_discarded()) {
    j.erase(key);
  } else {
    j[key] = value;
  }
  return j;
}

TEST(HfConfig, Qwen306BAsPublished) {
  const FloatModelConfig c = ParseHfConfig(kQwen306B, "config.json");
  EXPECT_EQ(c.family, ModelFamily::kQwen3);
  EXPECT_EQ(c.n_layers, 28);
  EXPECT_EQ(c.hidden, 1024);
  EXPECT_EQ(c.n_q_heads, 16);
  EXPECT_EQ(c.n_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.q_dim(), 2048);
  EXPECT_EQ(c.intermediate, 3072);
  EXPECT_EQ(c.vocab, 151936);
  EXPECT_EQ(c.max_pos, 40960);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.bos_token_id, 151643);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_EQ(c.storage_dtype, "bfloat16");
}

TEST(HfConfig, Transformers5LayoutAndNumberForms) {
  // transformers 5.x: rope_parameters, dtype, layer_types, eos as a list.
  auto j = nlohmann::json::parse(kQwen306B);
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j.erase("torch_dtype");
  j["rope_parameters"] = {{"rope_theta", 5e5}, {"rope_type", "default"}};
  j["dtype"] = "float32";
  j["layer_types"] = std::vector<std::string>(28, "full_attention");
  j["eos_token_id"] = {151645, 151643};
  const FloatModelConfig c = ParseHfConfig(j.dump(), "config.json");
  EXPECT_EQ(c.rope_theta, 5e5);
  EXPECT_EQ(c.storage_dtype, "float32");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  // rope_theta as a float reads the same as the published integer.
  EXPECT_EQ(ParseHfConfig(With("rope_theta", 1000000.0).dump(), "c").rope_theta, 1e6);
}

TEST(HfConfig, TransformersDefaults) {
  auto j = nlohmann::json::parse(kQwen306B);
  for (const char* key : {"head_dim", "num_key_value_heads", "rope_theta", "tie_word_embeddings",
                          "max_position_embeddings", "rms_norm_eps", "hidden_act"}) {
    j.erase(key);
  }
  const FloatModelConfig c = ParseHfConfig(j.dump(), "config.json");
  EXPECT_EQ(c.head_dim, 64);  // hidden / heads
  EXPECT_EQ(c.n_kv_heads, 16);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.max_pos, 32768);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
}

TEST(HfConfig, Llama) {
  auto j = nlohmann::json::parse(kQwen306B);
  j["model_type"] = "llama";
  j["architectures"] = {"LlamaForCausalLM"};
  j["mlp_bias"] = true;
  j["rope_theta"] = 100000;
  j["rms_norm_eps"] = 1e-5;
  const FloatModelConfig c = ParseHfConfig(j.dump(), "config.json");
  EXPECT_EQ(c.family, ModelFamily::kLlama);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.mlp_bias);
  EXPECT_EQ(c.rope_theta, 1e5);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
}

TEST(HfConfig, OneLineErrors) {
  const nlohmann::json gone = nlohmann::json::value_t::discarded;
  const std::pair<nlohmann::json, std::string> cases[] = {
      {With("hidden_size", gone), "m/config.json: missing key \"hidden_size\""},
      {With("hidden_size", 1024.0), "\"hidden_size\" must be an integer, not 1024.0"},
      {With("hidden_size", "1024"), "\"hidden_size\" must be an integer"},
      {With("rope_theta", "1e6"), "\"rope_theta\" must be a number"},
      {With("model_type", "mistral"),
       "unsupported model_type \"mistral\" (supported: qwen3, llama)"},
      {With("model_type", gone), "missing key \"model_type\""},
      {With("architectures", {"Qwen3Model"}), "architectures names Qwen3Model"},
      {With("hidden_act", "gelu"), "unsupported hidden_act \"gelu\""},
      {With("rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}),
       "unsupported RoPE scaling \"yarn\""},
      {With("use_sliding_window", true), "sliding-window attention is not supported"},
      {With("layer_types", {"sliding_attention"}),
       "layer type \"sliding_attention\" is not supported"},
      {With("num_key_value_heads", 5),
       "num_attention_heads 16 is not a multiple of num_key_value_heads 5"},
      {With("head_dim", 127), "head_dim 127 is odd"},
      {With("num_hidden_layers", 0), "num_hidden_layers 0 is outside [1, 2^24]"},
      {With("vocab_size", int64_t{1} << 40), "vocab_size 1099511627776 is outside [1, 2^24]"},
      {With("rms_norm_eps", 0), "rms_norm_eps must be in (0, 1)"},
      {With("rope_theta", 1), "rope_theta must be > 1"},
      {With("tie_word_embeddings", 1), "\"tie_word_embeddings\" must be true or false"},
      {With("eos_token_id", "x"), "\"eos_token_id\" must be an integer"},
  };
  for (const auto& [j, expected] : cases) {
    const std::string e = ErrorOf(j);
    EXPECT_NE(e.find(expected), std::string::npos)
        << "expected '" << expected << "', got '" << e << "'";
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  try {
    ParseHfConfig("{\"a\": ", "m/config.json");
    ADD_FAILURE();
  } catch (const ArtifactError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("m/config.json:1: malformed JSON", 0), 0u) << e.what();
  }
}

// A key twice (transformers' json.load keeps the last, other readers the first) is refused with
// both lines.
TEST(HfConfig, DuplicateKeysAreRefused) {
  std::string text = kQwen306B;
  text.insert(text.find('{') + 1, "\n  \"num_hidden_layers\": 2,");
  try {
    ParseHfConfig(text, "m/config.json");
    ADD_FAILURE() << "accepted a config.json with num_hidden_layers twice";
  } catch (const ArtifactError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("m/config.json:", 0), 0u) << message;
    EXPECT_NE(message.find("duplicate key \"num_hidden_layers\" (first at line 2)"),
              std::string::npos)
        << message;
  }
}

TEST(HfConfig, WrittenAsTransformersWritesIt) {
  FloatModelConfig c = ParseHfConfig(kQwen306B, "config.json");
  const std::string text = Qwen3ConfigJson(c);
  // PretrainedConfig.to_json_string: sorted keys, two-space indent, trailing newline; the
  // published file's keys and values.
  EXPECT_EQ(nlohmann::json::parse(text), nlohmann::json::parse(kQwen306B));
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("\n  \"rms_norm_eps\": 1e-06,\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  \"rope_theta\": 1000000,\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\"architectures\": [\n    \"Qwen3ForCausalLM\"\n  ],"), std::string::npos);
  const FloatModelConfig back = ParseHfConfig(text, "config.json");
  EXPECT_EQ(back.hidden, c.hidden);
  EXPECT_EQ(back.eos_token_ids, c.eos_token_ids);
  c.rope_theta = 12345.5;
  EXPECT_EQ(ParseHfConfig(Qwen3ConfigJson(c), "c").rope_theta, 12345.5);
}

}  // namespace
}  // namespace dv
