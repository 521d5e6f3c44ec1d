#include "engine/model_source.h"

#include <cstdlib>

#include "base/file_io.h"
#include "engine/synth.h"

namespace dv {

std::string CacheRoot() {
  std::string base;
  if (const char* c = std::getenv("DETVERIFY_CACHE"); c && *c) {
    base = c;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    base = std::string(x) + "/detverify";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    base = std::string(h) + "/.cache/detverify";
  } else {
    base = "/tmp/detverify-cache";
  }
  return base;
}

std::string SyntheticCacheDir(const std::string& preset, uint64_t seed) {
  return CacheRoot() + "/synthetic/" + preset + "-seed" + std::to_string(seed);
}

std::unique_ptr<Artifact> LoadSynthetic(const std::string& preset, uint64_t seed,
                                        void (*on_synthesis)(const std::string& dir)) {
  const SynthPreset& p = FindSynthPreset(preset);
  const std::string dir = SyntheticCacheDir(preset, seed);
  if (!PathExists(dir + "/model.safetensors") || !PathExists(dir + "/config.json")) {
    if (on_synthesis) on_synthesis(dir);
    MakeDirectories(dir);
    WriteSynthArtifact(p, seed, dir);
  }
  return Artifact::Load(dir);
}

}  // namespace dv
