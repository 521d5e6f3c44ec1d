#include "engine/model_source.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "engine/synth.h"

namespace dv {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

void MakeDirectories(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string part = path.substr(0, i);
      if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
        throw ArtifactError(part + ": cannot create folder: " + std::strerror(errno));
      }
    }
  }
}

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
  if (!Exists(dir + "/model.safetensors") || !Exists(dir + "/config.json")) {
    if (on_synthesis) on_synthesis(dir);
    MakeDirectories(dir);
    WriteSynthArtifact(p, seed, dir);
  }
  return Artifact::Load(dir);
}

}  // namespace dv
