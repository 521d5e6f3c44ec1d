#include "prepare/prepared_synthetic.h"

#include <algorithm>
#include <thread>

#include "base/file_io.h"
#include "checkpoint/hf_synth.h"
#include "engine/model_source.h"
#include "prepare/prepare_artifact.h"

namespace dv {

std::string PreparedSyntheticCacheDir(const std::string& preset, uint64_t seed) {
  return CacheRoot() + "/synthetic-prepared/" + preset + "-seed" + std::to_string(seed);
}

std::unique_ptr<Artifact> LoadPreparedSynthetic(const std::string& preset, uint64_t seed,
                                                void (*on_preparation)(const std::string& dir)) {
  const std::string dir = PreparedSyntheticCacheDir(preset, seed);
  // A folder there is complete (it is renamed into place whole).
  if (PathExists(dir + "/config.json")) return Artifact::Load(dir);
  if (on_preparation) on_preparation(dir);
  MakeDirectories(CacheRoot() + "/synthetic-prepared");
  const auto checkpoint = OpenHfSynthetic(preset, seed);
  PrepareOptions o;
  o.out_dir = dir;
  o.calibration =
      BuiltinCalibration(checkpoint->config().vocab, kBuiltinCalibSamples, kBuiltinCalibLen);
  o.recipe.model_id = "prepared:" + preset;
  o.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  try {
    PrepareArtifact(*checkpoint, o);
  } catch (const ArtifactError&) {
    // Another process may have renamed its (identical) folder into place first.
    if (!PathExists(dir + "/config.json")) throw;
  }
  return Artifact::Load(dir);
}

}  // namespace dv
