#include "engine/artifact.h"

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "base/strict_json.h"

namespace dv {
namespace {

// A DetLLM config.json holds a few integers per layer (kilobytes); anything near this bound is
// not an artifact's config.
constexpr size_t kMaxConfigBytes = 16 * kMiB;

[[noreturn]] void Fail(const std::string& path, const std::string& what) {
  throw ArtifactError(path + ": " + what);
}

std::string ShapeText(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out.push_back(',');
    out.append(std::to_string(s[i]));
  }
  out.push_back(']');
  return out;
}

// Reads config.json scalars, failing with the key's path when absent, not an integer, or
// outside its range.
class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {}
  int64_t Int(const nlohmann::json& obj, const std::string& key, const std::string& where) const {
    if (!obj.is_object() || !obj.contains(key)) Fail(path_, "missing key " + where + key);
    const auto& v = obj[key];
    if (!v.is_number_integer()) Fail(path_, "key " + where + key + " is not an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) {
      Fail(path_, "key " + where + key + " does not fit int64");
    }
    return v.get<int64_t>();
  }
  int64_t Int(const std::string& key) const { return Int(j_, key, ""); }
  // A shift (a dyadic scale's exponent): within [-kMaxArtifactShift, kMaxArtifactShift].
  int64_t Shift(const nlohmann::json& obj, const std::string& key, const std::string& where) const {
    const int64_t k = Int(obj, key, where);
    if (k < -kMaxArtifactShift || k > kMaxArtifactShift) {
      Fail(path_, "key " + where + key + " = " + std::to_string(k) +
                      " is outside the shift range [" + std::to_string(-kMaxArtifactShift) + ", " +
                      std::to_string(kMaxArtifactShift) + "]");
    }
    return k;
  }

 private:
  const nlohmann::json& j_;
  std::string path_;
};

// What config.json says: the model's dimensions and every shift the loader takes from it.
struct LayerShifts {
  int64_t q = 0, k = 0, v = 0, o = 0, gate = 0, up = 0, down = 0;
  int64_t q_norm_k = 0, k_norm_k = 0, as_k = 0, ms_k = 0, ds_k = 0, os_k = 0, qs_k = 0;
};
struct ArtifactConfig {
  ModelConfig dims;  // max_pos is the RoPE table's, filled later
  int64_t head_k = 0;
  std::vector<LayerShifts> layers;
  std::string sha256;   // of config.json's bytes
  int64_t max_pos = 0;  // config.json's max_pos if it has one (0: absent); must match RoPE
};

// Stage 1: config.json, bounded in size, every dimension and shift in range.
ArtifactConfig ReadArtifactConfig(const std::string& config_path) {
  std::string config_text, read_error;
  if (!ReadFileBounded(config_path, kMaxConfigBytes, config_text, read_error)) {
    Fail(config_path,
         read_error == "no such file" ? "cannot open (is this an artifact folder?)" : read_error);
  }
  ArtifactConfig out;
  out.sha256 = Sha256Hex(config_text);
  nlohmann::json cfg;
  JsonProblem problem;
  if (!ParseJsonStrict(config_text, cfg, problem)) {
    Fail(config_path + ":" + std::to_string(problem.line), problem.Describe());
  }
  if (!cfg.is_object()) Fail(config_path, "not a JSON object");

  const ConfigReader r(cfg, config_path);
  ModelConfig& c = out.dims;
  c.n_layers = r.Int("n_layers");
  c.hidden = r.Int("hidden");
  c.n_q_heads = r.Int("n_q_heads");
  c.n_kv_heads = r.Int("n_kv_heads");
  c.head_dim = r.Int("head_dim");
  c.intermediate = r.Int("intermediate");
  c.vocab = r.Int("vocab");
  for (int64_t dim :
       {c.n_layers, c.hidden, c.n_q_heads, c.n_kv_heads, c.head_dim, c.intermediate, c.vocab}) {
    if (dim <= 0 || dim > kMaxArtifactDim) {
      Fail(config_path,
           "a model dimension is out of range (1 to " + std::to_string(kMaxArtifactDim) + ")");
    }
  }
  // Values DetLLM's config.json carries beside the dimensions. The engine takes max_pos from the
  // RoPE tables and works in Q14 with 8-bit weights; a config.json that says otherwise, or names
  // an end-of-sequence token outside the vocabulary, describes another model than its tensors.
  if (cfg.contains("max_pos")) {
    out.max_pos = r.Int("max_pos");
    if (out.max_pos <= 0 || out.max_pos > kMaxArtifactDim) {
      Fail(config_path, "max_pos = " + std::to_string(out.max_pos) + " is out of range (1 to " +
                            std::to_string(kMaxArtifactDim) + ")");
    }
  }
  if (cfg.contains("rope_frac_bits") && r.Int("rope_frac_bits") != 14) {
    Fail(config_path, "rope_frac_bits = " + std::to_string(r.Int("rope_frac_bits")) +
                          "; the RoPE tables are Q14 (rope_frac_bits 14, docs/SPEC.md)");
  }
  if (cfg.contains("weight_bits") && r.Int("weight_bits") != 8) {
    Fail(config_path, "weight_bits = " + std::to_string(r.Int("weight_bits")) +
                          "; an int artifact holds 8-bit weights");
  }
  if (cfg.contains("eos_token_id")) {
    const int64_t eos = r.Int("eos_token_id");
    if (eos < 0 || eos >= c.vocab) {
      Fail(config_path, "eos_token_id = " + std::to_string(eos) +
                            " is outside the vocabulary (0 to " + std::to_string(c.vocab - 1) +
                            ")");
    }
  }
  // The no-QK-Norm variant (docs/SPEC.md §9) says so; absent means Qwen3's QK-Norm.
  if (cfg.contains("qk_norm")) {
    if (!cfg["qk_norm"].is_boolean()) Fail(config_path, "qk_norm must be true or false");
    c.qk_norm = cfg["qk_norm"].get<bool>();
  }
  if (!cfg.contains("layers") || !cfg["layers"].is_array() ||
      static_cast<int64_t>(cfg["layers"].size()) != c.n_layers) {
    Fail(config_path,
         "'layers' must be a list of n_layers = " + std::to_string(c.n_layers) + " entries");
  }
  out.head_k = r.Shift(cfg.value("head", nlohmann::json::object()), "k", "head.");
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const nlohmann::json& lc = cfg["layers"][static_cast<size_t>(i)];
    const std::string where = "layers[" + std::to_string(i) + "].";
    auto linear = [&](const char* name) {
      if (!lc.is_object() || !lc.contains(name)) Fail(config_path, "missing key " + where + name);
      return r.Shift(lc[name], "k", where + name + ".");
    };
    LayerShifts l;
    l.q = linear("q");
    l.k = linear("k");
    l.v = linear("v");
    l.o = linear("o");
    l.gate = linear("gate");
    l.up = linear("up");
    l.down = linear("down");
    if (c.qk_norm) {
      l.q_norm_k = r.Shift(lc, "q_norm_k", where);
      l.k_norm_k = r.Shift(lc, "k_norm_k", where);
    }
    l.as_k = r.Shift(lc, "as_k", where);
    l.ms_k = r.Shift(lc, "ms_k", where);
    l.ds_k = r.Shift(lc, "ds_k", where);
    l.os_k = r.Shift(lc, "os_k", where);
    l.qs_k = r.Shift(lc, "qs_k", where);
    out.layers.push_back(l);
  }
  return out;
}

class TensorTable {
 public:
  TensorTable(std::map<std::string, TensorView> t, std::string path)
      : t_(std::move(t)), path_(std::move(path)) {}

  const TensorView& Get(const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
    auto it = t_.find(name);
    if (it == t_.end()) Fail(path_, "missing tensor '" + name + "'");
    const TensorView& v = it->second;
    if (v.dtype != dtype) {
      Fail(path_,
           "tensor '" + name + "' has dtype " + v.dtype_name + ", expected " + DTypeName(dtype));
    }
    if (v.shape != shape) {
      Fail(path_, "tensor '" + name + "' has shape " + ShapeText(v.shape) +
                      " but config.json implies " + ShapeText(shape));
    }
    return v;
  }
  std::vector<int64_t> Ints(const std::string& name, DType dtype,
                            const std::vector<int64_t>& shape) {
    return DecodeIntTensor(Get(name, dtype, shape));
  }
  // An int64 tensor of shifts, each within [-kMaxArtifactShift, kMaxArtifactShift].
  std::vector<int64_t> Shifts(const std::string& name, const std::vector<int64_t>& shape) {
    std::vector<int64_t> v = Ints(name, DType::kI64, shape);
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] < -kMaxArtifactShift || v[i] > kMaxArtifactShift) {
        Fail(path_, "tensor '" + name + "' element " + std::to_string(i) + " = " +
                        std::to_string(v[i]) + " is outside the shift range [" +
                        std::to_string(-kMaxArtifactShift) + ", " +
                        std::to_string(kMaxArtifactShift) + "]");
      }
    }
    return v;
  }
  const int8_t* I8(const std::string& name, const std::vector<int64_t>& shape) {
    return reinterpret_cast<const int8_t*>(Get(name, DType::kI8, shape).bytes.data());
  }
  // Rows of a 2-D tensor whose first dimension is free (the RoPE tables).
  int64_t Rows(const std::string& name) const {
    auto it = t_.find(name);
    if (it == t_.end()) Fail(path_, "missing tensor '" + name + "'");
    if (it->second.shape.size() != 2) Fail(path_, "tensor '" + name + "' must be 2-D");
    return it->second.shape[0];
  }
  void CheckAllIntegers() const {
    for (const auto& [name, v] : t_) {
      if (!IsIntegerDType(v.dtype)) {
        Fail(path_, "tensor '" + name + "' has non-integer dtype " + v.dtype_name +
                        " (an int artifact holds integer tensors only)");
      }
    }
  }

 private:
  std::map<std::string, TensorView> t_;
  std::string path_;
};

std::vector<int16_t> ToInt16(const std::vector<int64_t>& v) {
  return std::vector<int16_t>(v.begin(), v.end());
}

// The tensors of one layer, checked against the config's shapes; its shifts from the config.
LayerWeights LoadLayer(TensorTable& t, const ModelConfig& c, const LayerShifts& shifts, int64_t i) {
  const int64_t H = c.hidden, KV = c.n_kv_heads, d = c.head_dim, Q = c.n_q_heads,
                I = c.intermediate;
  const std::string p = "layers." + std::to_string(i) + ".";
  auto linear = [&](const std::string& name, int64_t in_dim, int64_t out_dim, int64_t k) {
    LinearWeights lw;
    lw.in = in_dim;
    lw.out = out_dim;
    lw.w8t = t.I8(p + name + ".w8t", {in_dim, out_dim});
    lw.m = t.Ints(p + name + ".m", DType::kI64, {out_dim});
    lw.k = k;
    return lw;
  };
  LayerWeights l;
  l.q = linear("q", H, Q * d, shifts.q);
  l.k = linear("k", H, KV * d, shifts.k);
  l.v = linear("v", H, KV * d, shifts.v);
  l.o = linear("o", Q * d, H, shifts.o);
  l.gate = linear("gate", H, I, shifts.gate);
  l.up = linear("up", H, I, shifts.up);
  l.down = linear("down", I, H, shifts.down);
  if (c.qk_norm) {
    l.q_norm_m = t.Ints(p + "q_norm.m", DType::kI64, {d});
    l.k_norm_m = t.Ints(p + "k_norm.m", DType::kI64, {d});
  }
  l.q_norm_k = shifts.q_norm_k;
  l.k_norm_k = shifts.k_norm_k;
  l.as_m = t.Ints(p + "as_m", DType::kI64, {H});
  l.ms_m = t.Ints(p + "ms_m", DType::kI64, {H});
  l.ds_m = t.Ints(p + "ds_m", DType::kI64, {I});
  l.os_m = t.Ints(p + "os_m", DType::kI64, {Q * d});
  l.qs_m = t.Ints(p + "qs_m", DType::kI64, {KV, d});
  l.as_k = shifts.as_k;
  l.ms_k = shifts.ms_k;
  l.ds_k = shifts.ds_k;
  l.os_k = shifts.os_k;
  l.qs_k = shifts.qs_k;
  l.kq_m = t.Ints(p + "kq_m", DType::kI64, {KV, d});
  l.kq_k = t.Shifts(p + "kq_k", {KV, d});
  l.ks_m = t.Ints(p + "ks_m", DType::kI64, {KV});
  l.ks_k = t.Shifts(p + "ks_k", {KV});
  l.vq_m = t.Ints(p + "vq_m", DType::kI64, {KV});
  l.vq_k = t.Shifts(p + "vq_k", {KV});
  DeriveLayerConstants(c, l);
  return l;
}

// The tensors outside the layers -- embedding, head, RoPE tables -- checked against the config's
// shapes. max_pos is the RoPE table's own row count (config.json's is ignored), after which the
// shape as a whole is bounded.
// max_pos is the RoPE tables' own row count; config.json's max_pos, if given (non-zero), must
// agree.
void LoadGlobalTensors(TensorTable& t, ModelWeights& w, int64_t config_max_pos,
                       const std::string& config_path, const std::string& model_path) {
  ModelConfig& c = w.config;
  const int64_t H = c.hidden, V = c.vocab, d = c.head_dim;
  w.embed_e8 = t.I8("embed.e8", {V, H});
  w.embed_m = t.Ints("embed.m", DType::kI64, {V});
  w.embed_k = t.Shifts("embed.k", {V});
  w.head_w8t = t.I8("head.w8t", {H, V});
  w.head_m = t.Ints("head.m", DType::kI64, {V});
  c.max_pos = t.Rows("rope.cos");
  if (c.max_pos <= 0) Fail(model_path, "tensor 'rope.cos' has no rows");
  if (config_max_pos != 0 && config_max_pos != c.max_pos) {
    Fail(config_path, "max_pos = " + std::to_string(config_max_pos) + " but the RoPE tables of " +
                          model_path + " have " + std::to_string(c.max_pos) + " rows");
  }
  if (const char* why = CheckShapeBounds(c)) Fail(config_path, why);
  w.rope_cos = ToInt16(t.Ints("rope.cos", DType::kI16, {c.max_pos, d}));
  w.rope_sin = ToInt16(t.Ints("rope.sin", DType::kI16, {c.max_pos, d}));
}

}  // namespace

// The stages: config.json (dimensions and shifts, bounded), the mapped safetensors file (its
// header validated, every tensor an integer one, its SHA-256), the global tensors (embedding,
// head, RoPE tables, whose row count is max_pos), then each layer.
std::unique_ptr<Artifact> Artifact::Load(const std::string& dir) {
  auto a = std::unique_ptr<Artifact>(new Artifact());
  a->dir_ = dir;
  const std::string config_path = dir + "/config.json";
  const std::string model_path = dir + "/model.safetensors";

  ArtifactConfig config = ReadArtifactConfig(config_path);
  a->config_sha256_ = config.sha256;
  ModelWeights& w = a->weights_;
  w.config = config.dims;
  w.head_k = config.head_k;
  ModelConfig& c = w.config;

  a->file_ = MappedFile::Open(model_path);
  TensorTable t(ParseSafetensors(a->file_.bytes(), model_path), model_path);
  t.CheckAllIntegers();
  a->sha256_ = Sha256Hex(a->file_.bytes());

  LoadGlobalTensors(t, w, config.max_pos, config_path, model_path);

  for (int64_t i = 0; i < c.n_layers; ++i) {
    w.layers.push_back(LoadLayer(t, c, config.layers[static_cast<size_t>(i)], i));
  }
  if (const std::string why = CheckValueRanges(w); !why.empty()) Fail(model_path, why);
  return a;
}

}  // namespace dv
