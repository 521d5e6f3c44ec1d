// Exact references for the core tests: __int128 arithmetic that cannot wrap for int64 operands,
// a seeded SplitMix64 generator, and __int128 printing for failure messages.
//
// These restate the mathematical contracts (floor, round-to-nearest) directly; they share no
// code with engine/intmath.h.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace dv::test {

// __extension__: __int128 is a GCC/Clang extension (-Wpedantic would reject the bare name).
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

// floor(a / b) for b != 0, exact for every pair of int64-range operands.
inline Int128 FloorDiv128(Int128 a, Int128 b) {
  Int128 q = a / b;
  if (q * b != a && ((a < 0) != (b < 0))) q -= 1;
  return q;
}

// Round-to-nearest of a / b for b > 0 with ties away from zero: floor((2|a| + b) / (2b)) with
// a's sign restored.
inline Int128 RoundHalfAwayExact(Int128 a, Int128 b) {
  const Int128 mag = a < 0 ? -a : a;
  const Int128 r = (2 * mag + b) / (2 * b);
  return a < 0 ? -r : r;
}

// Round-to-nearest of a / 2^k, ties toward +infinity (k >= 1): floor((2a + 2^k) / 2^(k+1)).
inline Int128 RoundHalfUpPow2Exact(Int128 a, int k) {
  const Int128 den = Int128{1} << (k + 1);
  return FloorDiv128(2 * a + (Int128{1} << k), den);
}

// The int64 that a two's-complement machine stores for v (v mod 2^64).
inline int64_t WrapTo64(Int128 v) { return static_cast<int64_t>(static_cast<uint64_t>(v)); }

// floor(log2(v)) for v >= 1 by repeated halving.
inline int Msb(Int128 v) {
  int r = 0;
  while (v > 1) {
    v /= 2;
    ++r;
  }
  return r;
}

inline std::string ToString(Int128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  UInt128 u = neg ? UInt128{0} - static_cast<UInt128>(v) : static_cast<UInt128>(v);
  std::string s;
  while (u != 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return neg ? "-" + s : s;
}

// SplitMix64 (Steele, Lea, Flood 2014): a fixed, platform-independent stream per seed.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  int64_t NextI64() { return static_cast<int64_t>(Next()); }
  // Uniform in [lo, hi] (inclusive); the modulo bias is irrelevant for tests.
  int64_t Uniform(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
    if (span == 0) return NextI64();
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + Next() % span);
  }
  // A value whose magnitude has a random bit length in [0, 63], random sign: exercises every
  // magnitude, not only the huge ones a uniform int64 gives.
  int64_t AnyMagnitude() {
    const auto bits = static_cast<int>(Next() % 64);
    const uint64_t mag = bits == 0 ? 0 : (Next() >> (64 - bits));
    const auto v = static_cast<int64_t>(mag);
    return (Next() & 1) != 0 ? -v : v;
  }

 private:
  uint64_t state_;
};

}  // namespace dv::test
