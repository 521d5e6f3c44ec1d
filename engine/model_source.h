// Where a model comes from: an artifact folder, or a built-in synthetic preset materialised
// once into a cache folder (synthesis is deterministic, so the cached bytes are the same bytes).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/artifact.h"

namespace dv {

// The cache root: $DETVERIFY_CACHE, else $XDG_CACHE_HOME/detverify, else ~/.cache/detverify.
std::string CacheRoot();

// The folder synthetic artifacts are cached in: <cache root>/synthetic/<preset>-seed<N>.
std::string SyntheticCacheDir(const std::string& preset, uint64_t seed);

// Loads the synthetic preset, writing it into the cache first when absent. A cached copy is used
// only when the SHA-256 of its model.safetensors and config.json equal those in the folder's
// SHA256SUMS (written after each synthesis); otherwise one line on stderr says why, and it is
// synthesized again. `on_synthesis` is told when a (slow) synthesis starts. Throws ArtifactError.
std::unique_ptr<Artifact> LoadSynthetic(const std::string& preset, uint64_t seed,
                                        void (*on_synthesis)(const std::string& dir) = nullptr);

}  // namespace dv
