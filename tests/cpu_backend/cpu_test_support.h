// Shared helpers of the cpu backend tests: the ISA levels to run, deterministic random data, and
// whole-buffer comparisons that print the first mismatches.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backends/backend.h"
#include "engine/backends/backend_error.h"
#include "engine/backends/cpu_features.h"
#include "engine/backends/reference_backend.h"

namespace dv::test {

// Every level: the tests hold each one this CPU supports to the plain definitions. The others are
// instantiated too and skip (IsaTest), so a run shows what it did not cover.
inline std::vector<CpuIsa> IsasUnderTest() { return AllCpuIsas(); }

inline std::string IsaParamName(const ::testing::TestParamInfo<CpuIsa>& info) {
  return std::string(CpuIsaName(info.param));
}

// Base of the tests parameterised over IsasUnderTest(): skips a level this CPU cannot run.
class IsaTest : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    try {
      RequireCpuIsa(GetParam());
    } catch (const BackendError& e) {
      GTEST_SKIP() << e.what();
    }
  }
};

// SplitMix64: reproducible test data on every platform.
class TestRng {
 public:
  explicit TestRng(uint64_t seed) : x_(seed) {}
  uint64_t Next() {
    x_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = x_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  int64_t Uniform(int64_t lo, int64_t hi) {
    const auto span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
    return span == 0 ? static_cast<int64_t>(Next())
                     : static_cast<int64_t>(static_cast<uint64_t>(lo) + Next() % span);
  }

 private:
  uint64_t x_;
};

// Exact equality of two buffers; on failure, the first five mismatches with their indices.
template <typename T>
::testing::AssertionResult SameBits(const std::vector<T>& want, const std::vector<T>& got) {
  if (want.size() != got.size()) {
    return ::testing::AssertionFailure() << "sizes differ: " << want.size() << " vs " << got.size();
  }
  std::ostringstream out;
  int shown = 0;
  size_t count = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == got[i]) continue;
    ++count;
    if (shown++ < 5)
      out << "\n  [" << i << "] expected " << int64_t{want[i]} << ", got " << int64_t{got[i]};
  }
  if (count == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << count << " of " << want.size() << " differ:" << out.str();
}

// n int8 values uniform in [-128, 127].
inline std::vector<int8_t> RandomI8(size_t n, TestRng& rng) {
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(rng.Uniform(-128, 127));
  return v;
}

// One backend GEMM of random full-range operands against MatmulI8Ref, the whole output compared
// (the output buffer starts at -7, so an unwritten element shows).
inline ::testing::AssertionResult MatmulMatchesReference(Backend& backend, int64_t m, int64_t k,
                                                         int64_t n, TestRng& rng) {
  const auto a = RandomI8(static_cast<size_t>(m * k), rng);
  const auto w = RandomI8(static_cast<size_t>(k * n), rng);
  std::vector<int32_t> want(static_cast<size_t>(m * n)), got(static_cast<size_t>(m * n), -7);
  MatmulI8Ref(a.data(), m, k, w.data(), n, want.data());
  auto packed = backend.PackWeight(w.data(), k, n);
  backend.MatmulI8(a.data(), m, *packed, got.data());
  return SameBits(want, got) << " (m " << m << " k " << k << " n " << n << ")";
}

}  // namespace dv::test
