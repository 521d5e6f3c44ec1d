#include "engine/model_source.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "base/file_io.h"
#include "engine/synth.h"

namespace dv {
namespace {

// The cache's manifest, in sha256sum(1) format so that `sha256sum -c SHA256SUMS` checks it too.
constexpr const char* kManifest = "SHA256SUMS";

std::string ManifestText(const Artifact& a) {
  return a.sha256() + "  model.safetensors\n" + a.config_sha256() + "  config.json\n";
}

// "" when `dir` holds a manifest equal to the hashes of the artifact just loaded from it, else
// what is wrong.
std::string ManifestProblem(const std::string& dir, const Artifact& a) {
  std::string text, error;
  if (!ReadFileBounded(dir + "/" + kManifest, 4096, text, error)) {
    return std::string(kManifest) + ": " + error;
  }
  if (text != ManifestText(a)) return std::string("its SHA-256 does not match ") + kManifest;
  return "";
}

}  // namespace

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
  if (PathExists(dir + "/model.safetensors") && PathExists(dir + "/config.json")) {
    // A cached file is used only when its SHA-256 is the one recorded when it was written: a
    // flipped bit would otherwise be measured, and recorded under the preset's name.
    std::string problem;
    try {
      std::unique_ptr<Artifact> cached = Artifact::Load(dir);
      problem = ManifestProblem(dir, *cached);
      if (problem.empty()) return cached;
    } catch (const std::exception& e) {
      problem = e.what();
    }
    std::fprintf(stderr,
                 "detverify: %s: cached synthetic model rejected (%s); synthesizing it again\n",
                 dir.c_str(), problem.c_str());
  }
  if (on_synthesis) on_synthesis(dir);
  MakeDirectories(dir);
  WriteSynthArtifact(p, seed, dir);
  std::unique_ptr<Artifact> fresh = Artifact::Load(dir);
  WriteFileAtomic(dir + "/" + kManifest, ManifestText(*fresh));
  return fresh;
}

}  // namespace dv
