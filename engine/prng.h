// The integer PRNG of every synthetic model (int artifacts and float checkpoints): SplitMix64,
// one independent stream per tensor, seeded with seed ^ FNV-1a(tensor name). Fully specified
// integer arithmetic, so every platform draws the same numbers.
#pragma once

#include <cstdint>
#include <string_view>

namespace dv {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (inclusive); the modulo bias is irrelevant here and deterministic.
  int64_t Uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }

 private:
  uint64_t state_;
};

// 64-bit FNV-1a of a string.
inline uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char ch : s) h = (h ^ static_cast<uint8_t>(ch)) * 0x100000001b3ull;
  return h;
}

// The stream of one tensor of a synthetic model.
inline SplitMix64 TensorStream(uint64_t seed, std::string_view tensor_name) {
  return SplitMix64(seed ^ Fnv1a64(tensor_name));
}

}  // namespace dv
