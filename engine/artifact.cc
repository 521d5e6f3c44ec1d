#include "engine/artifact.h"

#include <nlohmann/json.hpp>

#include "base/file_io.h"

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

// Reads config.json scalars, failing with the key's path when absent or not an integer.
class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {}
  int64_t Int(const nlohmann::json& obj, const std::string& key, const std::string& where) const {
    if (!obj.is_object() || !obj.contains(key)) Fail(path_, "missing key " + where + key);
    const auto& v = obj[key];
    if (!v.is_number_integer()) Fail(path_, "key " + where + key + " is not an integer");
    return v.get<int64_t>();
  }
  int64_t Int(const std::string& key) const { return Int(j_, key, ""); }

 private:
  const nlohmann::json& j_;
  std::string path_;
};

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

}  // namespace

std::unique_ptr<Artifact> Artifact::Load(const std::string& dir) {
  auto a = std::unique_ptr<Artifact>(new Artifact());
  a->dir_ = dir;
  const std::string config_path = dir + "/config.json";
  const std::string model_path = dir + "/model.safetensors";

  std::string config_text, read_error;
  if (!ReadFileBounded(config_path, kMaxConfigBytes, config_text, read_error)) {
    Fail(config_path, read_error == "no such file" ? "cannot open (is this an artifact folder?)"
                                                   : read_error);
  }
  a->config_sha256_ = Sha256Hex(config_text);
  nlohmann::json cfg;
  try {
    cfg = nlohmann::json::parse(config_text);
  } catch (const nlohmann::json::parse_error& e) {
    Fail(config_path, std::string("malformed JSON (") + e.what() + ")");
  }
  if (!cfg.is_object()) Fail(config_path, "not a JSON object");

  const ConfigReader r(cfg, config_path);
  ModelWeights& w = a->weights_;
  ModelConfig& c = w.config;
  c.n_layers = r.Int("n_layers");
  c.hidden = r.Int("hidden");
  c.n_q_heads = r.Int("n_q_heads");
  c.n_kv_heads = r.Int("n_kv_heads");
  c.head_dim = r.Int("head_dim");
  c.intermediate = r.Int("intermediate");
  c.vocab = r.Int("vocab");
  for (int64_t dim :
       {c.n_layers, c.hidden, c.n_q_heads, c.n_kv_heads, c.head_dim, c.intermediate, c.vocab}) {
    if (dim <= 0 || dim > (int64_t{1} << 24))
      Fail(config_path, "a model dimension is out of range");
  }
  if (!cfg.contains("layers") || !cfg["layers"].is_array() ||
      static_cast<int64_t>(cfg["layers"].size()) != c.n_layers) {
    Fail(config_path,
         "'layers' must be a list of n_layers = " + std::to_string(c.n_layers) + " entries");
  }
  w.head_k = r.Int(cfg.value("head", nlohmann::json::object()), "k", "head.");

  a->file_ = MappedFile::Open(model_path);
  TensorTable t(ParseSafetensors(a->file_.bytes(), model_path), model_path);
  t.CheckAllIntegers();
  a->sha256_ = Sha256Hex(a->file_.bytes());

  const int64_t H = c.hidden, V = c.vocab, Q = c.n_q_heads, KV = c.n_kv_heads, d = c.head_dim,
                I = c.intermediate;
  w.embed_e8 = t.I8("embed.e8", {V, H});
  w.embed_m = t.Ints("embed.m", DType::kI64, {V});
  w.embed_k = t.Ints("embed.k", DType::kI64, {V});
  w.head_w8t = t.I8("head.w8t", {H, V});
  w.head_m = t.Ints("head.m", DType::kI64, {V});
  // RoPE tables: [max_pos, d] int16; max_pos is the table's own row count (config's is ignored).
  c.max_pos = t.Rows("rope.cos");
  if (c.max_pos <= 0) Fail(model_path, "tensor 'rope.cos' has no rows");
  if (const char* why = CheckShapeBounds(c)) Fail(config_path, why);
  w.rope_cos = ToInt16(t.Ints("rope.cos", DType::kI16, {c.max_pos, d}));
  w.rope_sin = ToInt16(t.Ints("rope.sin", DType::kI16, {c.max_pos, d}));

  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    const nlohmann::json& lc = cfg["layers"][static_cast<size_t>(i)];
    const std::string where = "layers[" + std::to_string(i) + "].";
    LayerWeights l;
    auto linear = [&](const std::string& name, int64_t in_dim, int64_t out_dim) {
      LinearWeights lw;
      lw.in = in_dim;
      lw.out = out_dim;
      lw.w8t = t.I8(p + name + ".w8t", {in_dim, out_dim});
      lw.m = t.Ints(p + name + ".m", DType::kI64, {out_dim});
      if (!lc.contains(name)) Fail(config_path, "missing key " + where + name);
      lw.k = r.Int(lc[name], "k", where + name + ".");
      return lw;
    };
    l.q = linear("q", H, Q * d);
    l.k = linear("k", H, KV * d);
    l.v = linear("v", H, KV * d);
    l.o = linear("o", Q * d, H);
    l.gate = linear("gate", H, I);
    l.up = linear("up", H, I);
    l.down = linear("down", I, H);
    l.q_norm_m = t.Ints(p + "q_norm.m", DType::kI64, {d});
    l.k_norm_m = t.Ints(p + "k_norm.m", DType::kI64, {d});
    l.q_norm_k = r.Int(lc, "q_norm_k", where);
    l.k_norm_k = r.Int(lc, "k_norm_k", where);
    l.as_m = t.Ints(p + "as_m", DType::kI64, {H});
    l.ms_m = t.Ints(p + "ms_m", DType::kI64, {H});
    l.ds_m = t.Ints(p + "ds_m", DType::kI64, {I});
    l.os_m = t.Ints(p + "os_m", DType::kI64, {Q * d});
    l.qs_m = t.Ints(p + "qs_m", DType::kI64, {KV, d});
    l.as_k = r.Int(lc, "as_k", where);
    l.ms_k = r.Int(lc, "ms_k", where);
    l.ds_k = r.Int(lc, "ds_k", where);
    l.os_k = r.Int(lc, "os_k", where);
    l.qs_k = r.Int(lc, "qs_k", where);
    l.kq_m = t.Ints(p + "kq_m", DType::kI64, {KV, d});
    l.kq_k = t.Ints(p + "kq_k", DType::kI64, {KV, d});
    l.ks_m = t.Ints(p + "ks_m", DType::kI64, {KV});
    l.ks_k = t.Ints(p + "ks_k", DType::kI64, {KV});
    l.vq_m = t.Ints(p + "vq_m", DType::kI64, {KV});
    l.vq_k = t.Ints(p + "vq_k", DType::kI64, {KV});
    DeriveLayerConstants(c, l);
    w.layers.push_back(std::move(l));
  }
  if (const std::string why = CheckValueRanges(w); !why.empty()) Fail(model_path, why);
  return a;
}

}  // namespace dv
