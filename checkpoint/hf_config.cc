#include "checkpoint/hf_config.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "base/check.h"
#include "base/strict_json.h"
#include "engine/safetensors.h"

namespace dv {
namespace {

using nlohmann::json;

class ConfigReader {
 public:
  ConfigReader(const json& j, const std::string& path) : j_(j), path_(path) {}

  [[noreturn]] void Fail(const std::string& what) const {
    throw ArtifactError(path_ + ": " + what);
  }

  const json* Find(const char* key) const {
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  int64_t Int(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    const json* v = Find(key);
    if (v == nullptr) {
      if (!fallback) Fail(std::string("missing key \"") + key + "\"");
      return *fallback;
    }
    return AsInt(*v, key);
  }
  int64_t AsInt(const json& v, const std::string& key) const {
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) Fail(key + " is out of range");
      return static_cast<int64_t>(v.get<uint64_t>());
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    Fail("\"" + key + "\" must be an integer, not " + v.dump());
  }
  double Number(const json* v, const std::string& key, double fallback) const {
    if (v == nullptr) return fallback;
    if (!v->is_number()) Fail("\"" + key + "\" must be a number, not " + v->dump());
    return v->get<double>();
  }
  bool Bool(const char* key, bool fallback) const {
    const json* v = Find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) Fail(std::string("\"") + key + "\" must be true or false");
    return v->get<bool>();
  }
  std::string String(const char* key, const std::string& fallback) const {
    const json* v = Find(key);
    if (v == nullptr) return fallback;
    if (!v->is_string()) Fail(std::string("\"") + key + "\" must be a string");
    return v->get<std::string>();
  }

 private:
  const json& j_;
  const std::string& path_;
};

// "rope_scaling" (4.x) or "rope_parameters" (5.x): only plain RoPE is what the engine computes.
void CheckRopeType(const ConfigReader& r, const json* rope, const char* key) {
  if (rope == nullptr) return;
  if (!rope->is_object()) r.Fail(std::string("\"") + key + "\" must be an object or null");
  for (const char* type_key : {"rope_type", "type"}) {
    const auto it = rope->find(type_key);
    if (it != rope->end() && !it->is_null() && *it != "default") {
      r.Fail(std::string("unsupported RoPE scaling ") + it->dump() + " in \"" + key +
             "\" (the float engine computes plain RoPE)");
    }
  }
}

}  // namespace

FloatModelConfig ParseHfConfig(std::string_view text, const std::string& path) {
  json j;
  JsonProblem problem;
  if (!ParseJsonStrict(text, j, problem)) throw ArtifactError(problem.Where(path));
  if (!j.is_object()) throw ArtifactError(path + ": not a JSON object");
  const ConfigReader r(j, path);
  FloatModelConfig c;
  const std::string model_type = r.String("model_type", "");
  std::string architecture;
  if (model_type == "qwen3") {
    c.family = ModelFamily::kQwen3;
    c.qk_norm = true;
    architecture = "Qwen3ForCausalLM";
  } else if (model_type == "llama") {
    c.family = ModelFamily::kLlama;
    c.qk_norm = false;
    architecture = "LlamaForCausalLM";
  } else if (model_type.empty()) {
    r.Fail("missing key \"model_type\"");
  } else {
    r.Fail("unsupported model_type \"" + model_type + "\" (supported: qwen3, llama)");
  }
  if (const json* arch = r.Find("architectures")) {
    if (!arch->is_array() || arch->empty() || !(*arch)[0].is_string())
      r.Fail("\"architectures\" must be a list of class names");
    if ((*arch)[0] != architecture) {
      r.Fail("architectures names " + (*arch)[0].get<std::string>() + "; a " + model_type +
             " causal LM is " + architecture);
    }
  }
  c.n_layers = r.Int("num_hidden_layers");
  c.hidden = r.Int("hidden_size");
  c.n_q_heads = r.Int("num_attention_heads");
  c.n_kv_heads = r.Int("num_key_value_heads", c.n_q_heads);
  c.intermediate = r.Int("intermediate_size");
  c.vocab = r.Int("vocab_size");
  // transformers' class defaults where a key is absent.
  c.max_pos = r.Int("max_position_embeddings",
                    c.family == ModelFamily::kQwen3 ? int64_t{32768} : int64_t{2048});
  if (c.n_q_heads < 1) r.Fail("num_attention_heads must be positive");
  c.head_dim = r.Int("head_dim", c.hidden / c.n_q_heads);
  c.rms_norm_eps = r.Number(r.Find("rms_norm_eps"), "rms_norm_eps", 1e-6);
  c.tie_word_embeddings = r.Bool("tie_word_embeddings", false);
  c.attention_bias = r.Bool("attention_bias", false);
  c.mlp_bias = c.family == ModelFamily::kLlama && r.Bool("mlp_bias", false);
  if (const std::string act = r.String("hidden_act", "silu"); act != "silu") {
    r.Fail("unsupported hidden_act \"" + act + "\" (the float engine computes SiLU)");
  }
  if (r.Bool("use_sliding_window", false)) r.Fail("sliding-window attention is not supported");
  if (const json* types = r.Find("layer_types")) {
    if (!types->is_array()) r.Fail("\"layer_types\" must be a list");
    for (const json& t : *types) {
      if (t != "full_attention") r.Fail("layer type " + t.dump() + " is not supported");
    }
  }
  CheckRopeType(r, r.Find("rope_scaling"), "rope_scaling");
  const json* params = r.Find("rope_parameters");
  CheckRopeType(r, params, "rope_parameters");
  const json* theta = r.Find("rope_theta");
  if (params != nullptr && params->contains("rope_theta")) theta = &(*params)["rope_theta"];
  c.rope_theta = r.Number(theta, "rope_theta", 10000.0);
  if (const json* bos = r.Find("bos_token_id")) c.bos_token_id = r.AsInt(*bos, "bos_token_id");
  if (const json* eos = r.Find("eos_token_id")) {
    if (eos->is_array()) {
      for (const json& e : *eos) c.eos_token_ids.push_back(r.AsInt(e, "eos_token_id"));
    } else {
      c.eos_token_ids.push_back(r.AsInt(*eos, "eos_token_id"));
    }
  }
  c.storage_dtype = r.String("torch_dtype", r.String("dtype", ""));
  if (const std::string why = CheckFloatModelConfig(c); !why.empty()) r.Fail(why);
  return c;
}

std::string Qwen3ConfigJson(const FloatModelConfig& c) {
  DV_CHECK(c.family == ModelFamily::kQwen3) << "Qwen3ConfigJson: the config is not a Qwen3 model";
  json j = {
      {"architectures", {"Qwen3ForCausalLM"}},
      {"attention_bias", c.attention_bias},
      {"attention_dropout", 0.0},
      {"bos_token_id", c.bos_token_id ? json(*c.bos_token_id) : json(nullptr)},
      {"head_dim", c.head_dim},
      {"hidden_act", "silu"},
      {"hidden_size", c.hidden},
      {"initializer_range", 0.02},
      {"intermediate_size", c.intermediate},
      {"max_position_embeddings", c.max_pos},
      {"max_window_layers", c.n_layers},
      {"model_type", "qwen3"},
      {"num_attention_heads", c.n_q_heads},
      {"num_hidden_layers", c.n_layers},
      {"num_key_value_heads", c.n_kv_heads},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope_scaling", nullptr},
      {"sliding_window", nullptr},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"torch_dtype", c.storage_dtype},
      {"transformers_version", "4.51.0"},
      {"use_cache", true},
      {"use_sliding_window", false},
      {"vocab_size", c.vocab},
  };
  // An integral theta is written as an integer, as the published configs do.
  if (c.rope_theta == std::floor(c.rope_theta) && c.rope_theta < 9.0e15) {
    j["rope_theta"] = static_cast<int64_t>(c.rope_theta);
  } else {
    j["rope_theta"] = c.rope_theta;
  }
  if (c.eos_token_ids.size() == 1) {
    j["eos_token_id"] = c.eos_token_ids[0];
  } else if (c.eos_token_ids.empty()) {
    j["eos_token_id"] = nullptr;
  } else {
    j["eos_token_id"] = c.eos_token_ids;
  }
  return j.dump(2) + "\n";
}

}  // namespace dv
