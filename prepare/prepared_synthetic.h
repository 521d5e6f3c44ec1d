// The built-in model of the same kind as a real one: a synthetic float checkpoint (`synth
// --format hf`, with outlier channels) prepared by prepare with the built-in calibration, so the
// int rows and the float rows of a scenario run one model, as with real weights. Cached like the
// int synthetic artifacts (synthesis and prepare are deterministic: the cache holds the same
// bytes on every machine, pinned in tests/prepare/prepared_synthetic_test.cc).
//
// The same artifact by hand:
//   detverify synth --format hf --preset P --seed N --out ckpt
//   detverify prepare --hf ckpt --out int8 --model-id prepared:P
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/artifact.h"

namespace dv {

// <cache root>/synthetic-prepared/<preset>-seed<N> (the float checkpoint it is prepared from
// lies in HfSyntheticCacheDir).
std::string PreparedSyntheticCacheDir(const std::string& preset, uint64_t seed);

// Loads the prepared synthetic preset (a `synth --format hf` preset name), synthesizing the
// float checkpoint and preparing it into the cache first when absent; `on_preparation` is told
// when that slow step starts (minutes for qwen3-0.6b). Two processes preparing at once both
// succeed (the folder is renamed into place whole). Throws ExpectedError.
std::unique_ptr<Artifact> LoadPreparedSynthetic(
    const std::string& preset, uint64_t seed,
    void (*on_preparation)(const std::string& dir) = nullptr);

}  // namespace dv
