#include "checkpoint/hf_checkpoint.h"

#include <sys/stat.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/file_io.h"
#include "base/strict_json.h"
#include "checkpoint/hf_config.h"
#include "checkpoint/hf_layout.h"

namespace dv {
namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";
constexpr size_t kMaxJsonBytes = size_t{64} << 20;  // config.json, index: far above any real one

[[noreturn]] void Fail(const std::string& path, const std::string& what) {
  throw ArtifactError(path + ": " + what);
}

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

// Refuses FIFOs, devices and folders without blocking, and anything above the bound.
std::string ReadJsonFile(const std::string& path) {
  std::string text, error;
  if (!ReadFileBounded(path, kMaxJsonBytes, text, error)) Fail(path, error);
  return text;
}

std::string Shape(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool IsFloatDType(DType d) { return d == DType::kBF16 || d == DType::kF16 || d == DType::kF32; }

bool IsIgnoredBuffer(const std::string& name) {
  const std::string suffix = ".rotary_emb.inv_freq";
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Located {
  TensorView view;
  std::string file;
};

// The shard file names of an index: plain names inside the folder, each read once.
std::map<std::string, std::string> ReadIndex(const std::string& index_path) {
  nlohmann::json index;
  JsonProblem problem;
  if (!ParseJsonStrict(ReadJsonFile(index_path), index, problem)) {
    Fail(index_path + ":" + std::to_string(problem.line), problem.Describe());
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    Fail(index_path, "needs a \"weight_map\" object (tensor name -> shard file)");
  }
  std::map<std::string, std::string> weight_map;
  for (const auto& [name, file] : index["weight_map"].items()) {
    if (!file.is_string())
      Fail(index_path, "weight_map entry of '" + name + "' is not a file name");
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f.front() == '.' ||
        f.find('\0') != std::string::npos) {
      Fail(index_path, "shard name \"" + f + "\" of '" + name + "' is not a file in the folder");
    }
    weight_map.emplace(name, f);
  }
  if (weight_map.empty()) Fail(index_path, "weight_map lists no tensors");
  return weight_map;
}

}  // namespace

bool IsHfCheckpointDir(const std::string& dir) {
  return IsFile(dir + "/config.json") &&
         (IsFile(dir + "/" + kSingleFile) || IsFile(dir + "/" + kIndexFile));
}

std::unique_ptr<FloatCheckpoint> OpenHfCheckpoint(const std::string& dir) {
  const std::string config_path = dir + "/config.json";
  if (!IsFile(config_path)) {
    Fail(config_path, "cannot open (is this a Hugging Face checkpoint folder?)");
  }
  FloatWeights w;
  w.config = ParseHfConfig(ReadJsonFile(config_path), config_path);
  const FloatModelConfig& c = w.config;
  w.layers.resize(static_cast<size_t>(c.n_layers));

  // Map every weight file once and index its tensors by name.
  std::vector<MappedFile> maps;
  std::vector<std::string> files;
  std::map<std::string, Located> tensors;
  std::string missing_file;  // where a missing tensor is reported
  std::map<std::string, std::string> weight_map;
  const std::string single = dir + "/" + kSingleFile;
  const std::string index_path = dir + "/" + kIndexFile;
  if (IsFile(single)) {
    files.push_back(single);
    missing_file = single;
  } else if (IsFile(index_path)) {
    weight_map = ReadIndex(index_path);
    std::set<std::string> shards;
    for (const auto& [name, shard] : weight_map) shards.insert(shard);
    for (const std::string& shard : shards) files.push_back(dir + "/" + shard);
    missing_file = index_path;
  } else {
    Fail(dir, std::string("no ") + kSingleFile + " or " + kIndexFile);
  }
  for (const std::string& path : files) maps.push_back(MappedFile::Open(path));  // all there?
  for (size_t f = 0; f < files.size(); ++f) {
    const std::string& path = files[f];
    for (auto& [name, view] : ParseSafetensors(maps[f].bytes(), path)) {
      if (!weight_map.empty()) {
        const auto it = weight_map.find(name);
        if (it == weight_map.end()) Fail(path, "tensor '" + name + "' is not in " + kIndexFile);
        if (dir + "/" + it->second != path) {
          Fail(path,
               "tensor '" + name + "' belongs to " + it->second + " according to " + kIndexFile);
        }
      }
      tensors.emplace(name, Located{std::move(view), path});
    }
  }
  for (const auto& [name, shard] : weight_map) {
    if (!tensors.count(name))
      Fail(dir + "/" + shard, "missing tensor '" + name + "' (listed in " + kIndexFile + ")");
  }

  auto check = [&](const std::string& name, const Located& t, const std::vector<int64_t>& shape) {
    if (!IsFloatDType(t.view.dtype)) {
      Fail(t.file, "tensor '" + name + "' has dtype " + t.view.dtype_name +
                       "; a float checkpoint holds BF16, F16 or F32");
    }
    if (t.view.shape != shape) {
      Fail(t.file, "tensor '" + name + "' has shape " + Shape(t.view.shape) +
                       ", config.json needs " + Shape(shape));
    }
  };
  std::set<std::string> used;
  for (const HfTensorSpec& spec : HfTensorLayout(c)) {
    const auto it = tensors.find(spec.name);
    if (it == tensors.end()) {
      const std::string where =
          weight_map.count(spec.name) ? dir + "/" + weight_map[spec.name] : missing_file;
      Fail(where, "missing tensor '" + spec.name + "' (config.json: " + std::to_string(c.n_layers) +
                      " layers, " + ModelFamilyName(c.family) + ")");
    }
    check(spec.name, it->second, spec.shape);
    FloatTensor& slot = HfTensorSlot(w, spec);
    slot.name = spec.name;
    slot.file = it->second.file;
    slot.dtype = it->second.view.dtype;
    slot.shape = spec.shape;
    slot.bytes = it->second.view.bytes;
    used.insert(spec.name);
  }
  bool ignored_head = false;
  if (c.tie_word_embeddings) {
    w.lm_head = w.embed;
    if (const auto it = tensors.find(kHfLmHeadName); it != tensors.end()) {
      check(kHfLmHeadName, it->second, {c.vocab, c.hidden});
      used.insert(kHfLmHeadName);
      ignored_head = true;
    }
  }
  for (const auto& [name, t] : tensors) {
    if (used.count(name) || IsIgnoredBuffer(name)) continue;
    Fail(t.file, "unexpected tensor '" + name + "' (not part of a " +
                     std::string(ModelFamilyName(c.family)) + " model with this config.json)");
  }
  auto ckpt = std::make_unique<FloatCheckpoint>(
      dir, std::move(w), std::move(maps), std::vector<std::vector<uint8_t>>{}, std::move(files));
  ckpt->set_ignored_lm_head(ignored_head);
  return ckpt;
}

}  // namespace dv
