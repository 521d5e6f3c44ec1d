#include "prepare/prepare_artifact.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "base/check.h"
#include "base/file_io.h"
#include "base/sha256.h"
#include "engine/artifact.h"
#include "engine/safetensors.h"
#include "prepare/safetensors_writer.h"

namespace dv {
namespace {

namespace fs = std::filesystem;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void CheckFinite(const FloatCheckpoint& ckpt) {
  const FloatWeights& w = ckpt.weights();
  auto check = [](const FloatTensor& t) {
    if (const auto at = FirstNonFinite(t)) {
      throw ArtifactError(t.file + ": tensor " + t.name + " holds a NaN or infinity (element " +
                          std::to_string(*at) + ")");
    }
  };
  check(w.embed);
  check(w.final_norm);
  if (!w.config.tie_word_embeddings) check(w.lm_head);
  for (const FloatLayerWeights& l : w.layers) {
    for (const FloatTensor* t :
         {&l.input_norm, &l.q, &l.k, &l.v, &l.o, &l.post_norm, &l.gate, &l.up, &l.down}) {
      check(*t);
    }
    for (const auto* t : {&l.q_norm, &l.k_norm, &l.q_bias, &l.k_bias, &l.v_bias, &l.o_bias,
                          &l.gate_bias, &l.up_bias, &l.down_bias}) {
      if (*t) check(**t);
    }
  }
}

// Removes a temporary folder on every exit but a successful rename.
class TempFolder {
 public:
  explicit TempFolder(std::string path) : path_(std::move(path)) {}
  ~TempFolder() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  const std::string& path() const { return path_; }
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

void CopyFileInto(const std::string& from, const std::string& to) {
  const MappedFile f = MappedFile::Open(from);
  WriteFileAtomic(to, f.bytes());
}

}  // namespace

std::string ArtifactConfigText(const nlohmann::ordered_json& config) {
  return config.dump(1, ' ', /*ensure_ascii=*/true);
}

PrepareResult PrepareArtifact(const FloatCheckpoint& checkpoint, const PrepareOptions& options) {
  const FloatModelConfig& c = checkpoint.config();
  const std::string why = CheckPreparable(c);
  if (!why.empty()) throw ArtifactError(checkpoint.source() + ": " + why);
  DV_CHECK(options.stats.has_value() != options.calibration.has_value())
      << "PrepareArtifact needs statistics or a calibration, not both";
  const fs::path out = fs::path(options.out_dir).lexically_normal();
  if (out.empty() || out.filename().empty()) {
    throw ArtifactError(options.out_dir + ": not a folder name");
  }
  std::error_code ec;
  if (fs::exists(fs::symlink_status(out, ec)) && !options.force) {
    throw ArtifactError(out.string() + ": exists (pass --force to replace it)");
  }
  // --force must never delete the checkpoint (or a folder holding it).
  const fs::path source = fs::weakly_canonical(checkpoint.source(), ec);
  const fs::path target = fs::weakly_canonical(out, ec);
  const auto [a, b] = std::mismatch(target.begin(), target.end(), source.begin(), source.end());
  if (a == target.end()) {
    throw ArtifactError(out.string() + ": is (or holds) the checkpoint " + checkpoint.source() +
                        "; choose another --out");
  }
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) {
    throw ArtifactError(parent.string() + ": no such folder (the output's parent must exist)");
  }
  CheckFinite(checkpoint);

  PrepareResult result;
  // ---- statistics ----
  const auto t0 = std::chrono::steady_clock::now();
  CalibStats stats;
  RecipeOptions recipe = options.recipe;
  nlohmann::ordered_json calibration = nlohmann::ordered_json::object();
  if (options.stats) {
    stats = *options.stats;
    calibration["kind"] = "statistics";
    if (!options.stats_source.empty()) {
      calibration["source"] = fs::path(options.stats_source).filename().string();
      calibration["sha256"] = Sha256FileHex(options.stats_source);
    }
    if (!stats.calibration.empty()) calibration["statistics_of"] = stats.calibration;
  } else {
    const CalibrationSet& set = *options.calibration;
    calibration["kind"] = set.kind;
    calibration["source"] = set.SourceName();
    calibration["sha256"] = set.sha256;
    calibration["samples"] = set.samples();
    calibration["len"] = set.max_len();
    calibration["forward"] = "float64, fixed summation order, IEEE + - * / sqrt only";
    // config.json's calib_samples / calib_len (DetLLM's record of its calibration) are the set's.
    recipe.calib_samples = set.samples();
    recipe.calib_len = set.max_len();
    CalibForwardOptions fo;
    fo.threads = options.threads;
    fo.isa = options.isa;
    fo.progress = options.progress;
    stats = CollectCalibStats(checkpoint, set, fo);
  }
  result.calibration_seconds = Seconds(t0);
  if (!options.save_stats_path.empty()) SaveCalibStats(stats, options.save_stats_path);

  // ---- quantization ----
  const auto t1 = std::chrono::steady_clock::now();
  RecipeOptions ro = recipe;
  if (ro.model_id.empty())
    ro.model_id = fs::path(checkpoint.source()).lexically_normal().filename().string();
  if (ro.model_id.empty()) ro.model_id = checkpoint.source();
  ro.threads = options.threads;
  if (!ro.progress) ro.progress = options.progress;
  QuantizedModel q = QuantizeCheckpoint(checkpoint, stats, ro);
  result.rope_sensitive_entries = q.rope_sensitive_entries;
  // Provenance, after DetLLM's keys (its loader reads only its own). Nothing here depends on
  // where the files lie, so the same inputs give the same config.json on every machine.
  nlohmann::ordered_json prov;
  prov["tool"] = "detverify prepare";
  prov["recipe"] = "DetLLM prepare.py (detllm-v1)";
  prov["family"] = ModelFamilyName(c.family);
  prov["checkpoint_sha256"] = checkpoint.ContentSha256();
  prov["head"] = c.tie_word_embeddings ? "tied embedding" : "lm_head.weight";
  prov["rope_theta"] = c.rope_theta;
  prov["calibration"] = calibration;
  prov["rope_sensitive_entries"] = q.rope_sensitive_entries;
  q.config["prepare"] = prov;
  const std::string config_text = ArtifactConfigText(q.config);
  result.quantization_seconds = Seconds(t1);

  // ---- the folder, complete or not at all ----
  const std::string tmp_name = "." + out.filename().string() + ".tmp." + std::to_string(::getpid());
  TempFolder tmp((parent / tmp_name).string());
  fs::remove_all(tmp.path(), ec);
  if (!fs::create_directory(tmp.path(), ec)) {
    throw ArtifactError(tmp.path() + ": cannot create folder: " + ec.message());
  }
  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, t] : q.tensors) entries.push_back({name, t.dtype, t.shape, t.bytes});
  if (options.progress) options.progress("writing", 0, 1);
  WriteSafetensorsPythonLayout(tmp.path() + "/model.safetensors", std::move(entries));
  q.tensors.clear();
  // Test-only fault injection (as the harness's): DETVERIFY_FAULT containing crash:prepare
  // kills the process here, half-way through writing the folder (tests/prepare_cli).
  if (const char* f = std::getenv("DETVERIFY_FAULT")) {
    if ((std::string(",") + f + ",").find(",crash:prepare,") != std::string::npos) std::abort();
  }
  WriteFileAtomic(tmp.path() + "/config.json",
                  {reinterpret_cast<const uint8_t*>(config_text.data()), config_text.size()});
  if (!options.tokenizer_json.empty()) {
    CopyFileInto(options.tokenizer_json, tmp.path() + "/tokenizer.json");
  }
  if (options.write_extra_files) options.write_extra_files(tmp.path());
  {
    // What was written must load as an artifact (it validates every shape and bounds every
    // shift and value range); a failure here is a bug of the recipe, never left behind.
    const auto loaded = Artifact::Load(tmp.path());
    result.sha256 = loaded->sha256();
    result.config_sha256 = loaded->config_sha256();
  }
  if (options.progress) options.progress("writing", 1, 1);
  if (fs::exists(fs::symlink_status(out, ec))) {
    const fs::path old =
        parent / ("." + out.filename().string() + ".old." + std::to_string(::getpid()));
    fs::rename(out, old, ec);
    if (ec)
      throw ArtifactError(out.string() + ": cannot move the old folder aside: " + ec.message());
    fs::rename(tmp.path(), out, ec);
    if (ec) {
      fs::rename(old, out);
      throw ArtifactError(out.string() + ": cannot rename into place: " + ec.message());
    }
    fs::remove_all(old, ec);
  } else {
    fs::rename(tmp.path(), out, ec);
    if (ec) throw ArtifactError(out.string() + ": cannot rename into place: " + ec.message());
  }
  tmp.Release();
  result.out_dir = out.string();
  return result;
}

}  // namespace dv
