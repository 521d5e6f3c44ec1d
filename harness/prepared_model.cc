#include "harness/prepared_model.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "base/file_io.h"
#include "base/sha256.h"
#include "engine/model_source.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/model_tokenizer.h"
#include "prepare/calib_text.h"
#include "prepare/prepare_artifact.h"

namespace dv::harness {

std::string PreparedModelCacheDir(const PreparedModelSpec& spec, const std::string& calib_sha256) {
  return CacheRoot() + "/prepared/" + spec.model_sha256.substr(0, 16) + "-" +
         calib_sha256.substr(0, 16) + "-" + std::to_string(spec.samples) + "x" +
         std::to_string(spec.len);
}

std::unique_ptr<Artifact> LoadPreparedModel(const PreparedModelSpec& spec,
                                            void (*on_preparation)(const std::string& dir)) {
  const std::string calib_sha256 = Sha256FileHex(spec.calib_path);
  const std::string dir = PreparedModelCacheDir(spec, calib_sha256);
  // A folder there is complete (it is renamed into place whole).
  if (PathExists(dir + "/config.json")) return Artifact::Load(dir);
  if (on_preparation) on_preparation(dir);
  MakeDirectories(CacheRoot() + "/prepared");
  const std::string tokenizer_path =
      spec.gguf ? spec.model_path : gguf::TokenizerPathFor(spec.model_path);
  PrepareOptions o;
  o.out_dir = dir;
  o.calibration =
      TokenizeCalibrationText(spec.calib_path, gguf::LoadModelTokenizer(tokenizer_path).tokenizer,
                              spec.samples, spec.len, spec.checkpoint->config().vocab);
  o.recipe.model_id = std::filesystem::path(spec.model_path).filename().string();
  o.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (spec.gguf) {
    const std::string model = spec.model_path;
    o.write_extra_files = [model](const std::string& into) {
      gguf::WriteTokenizerGguf(gguf::GgufFile::Open(model),
                               into + "/" + gguf::kArtifactTokenizerFile);
    };
  } else if (PathExists(spec.model_path + "/tokenizer.json")) {
    o.tokenizer_json = spec.model_path + "/tokenizer.json";
  }
  try {
    PrepareArtifact(*spec.checkpoint, o);
  } catch (const ArtifactError&) {
    // Another process may have renamed its (identical) folder into place first.
    if (!PathExists(dir + "/config.json")) throw;
  }
  return Artifact::Load(dir);
}

}  // namespace dv::harness
