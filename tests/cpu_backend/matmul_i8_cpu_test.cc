// The cpu backend's int8 GEMM against MatmulI8Ref, whole output buffers compared exactly, at
// every ISA level and thread count, for odd shapes (k and n not multiples of the kernels'
// groups and panels, m across the row-block sizes) and full-range int8 values including -128.
#include <gtest/gtest.h>

#include <vector>

#include "engine/backends/cpu_backend.h"
#include "engine/backends/reference_backend.h"
#include "tests/cpu_backend/cpu_test_support.h"

namespace dv {
namespace {

class MatmulI8Cpu : public test::IsaTest {};

void CheckShape(Backend& backend, int64_t m, int64_t k, int64_t n, test::TestRng& rng) {
  EXPECT_TRUE(test::MatmulMatchesReference(backend, m, k, n, rng));
}

// Around every kernel's blocking: rows in blocks of 8 (AVX-512), 4 and 2, panels of 16 and 48
// columns (n one below, at and above their multiples), k in groups of 4.
TEST_P(MatmulI8Cpu, OddShapesEveryThreadCount) {
  test::TestRng rng(11);
  for (int threads : {1, 2, 3, 4}) {
    auto backend = MakeCpuBackend({threads, GetParam(), false, std::nullopt, true});
    for (int64_t m : {1, 2, 3, 5, 6, 7, 8, 9, 13, 16, 17}) {
      for (int64_t k : {1, 3, 4, 5, 12, 28, 63, 64, 65, 130}) {
        for (int64_t n : {1, 15, 16, 17, 47, 48, 49, 63, 64, 65, 97, 130}) {
          CheckShape(*backend, m, k, n, rng);
        }
      }
    }
  }
}

// Software prefetch only asks for bytes early: at any distance (beyond a panel, beyond the
// weights' end) the products stay MatmulI8Ref's.
TEST_P(MatmulI8Cpu, SameProductsAtEveryPrefetchDistance) {
  test::TestRng rng(13);
  for (int64_t prefetch : {0, 64, 192, 2048, 65536}) {
    auto backend = MakeCpuBackend({2, GetParam(), false, prefetch, true});
    for (int64_t m : {1, 3, 8, 9}) {
      for (int64_t k : {4, 65, 130}) {
        for (int64_t n : {17, 48, 97}) CheckShape(*backend, m, k, n, rng);
      }
    }
    CheckShape(*backend, 1, 1024, 2048, rng);
  }
}

TEST_P(MatmulI8Cpu, ModelShapes) {
  test::TestRng rng(12);
  auto backend = MakeCpuBackend({2, GetParam(), true, std::nullopt, true});
  for (int64_t m : {1, 8, 37}) {
    CheckShape(*backend, m, 1024, 2048, rng);
    CheckShape(*backend, m, 3072, 1024, rng);
  }
}

// The extremes of the int32 contract: every product 128 * 128 or -128 * 127 over the largest
// inner dimension the model bounds allow (k * 127 * 128 < 2^31), where partial sums and the
// VNNI offset correction exercise int32 wrap-around. 3 rows take the vector kernels' row blocks,
// 20 the AMX tiles (a full and a padded block of rows, k's last 8 values past the tiles).
TEST_P(MatmulI8Cpu, ExtremeValuesAtTheLargestInnerDimension) {
  const int64_t k = ((int64_t{1} << 31) - 1) / (127 * 128);
  const int64_t n = 70;
  auto backend = MakeCpuBackend({2, GetParam(), false, std::nullopt, true});
  for (int pattern = 0; pattern < 6; ++pattern) {
    const int64_t m = pattern < 3 ? 3 : 20;
    std::vector<int8_t> a(static_cast<size_t>(m * k)), w(static_cast<size_t>(k * n));
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = pattern % 3 == 0 ? -128 : (pattern % 3 == 1 ? 127 : (i % 2 ? -127 : 127));
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = pattern % 3 == 0 ? 127 : (pattern % 3 == 1 ? -127 : (i % 3 ? 127 : -128));
    std::vector<int32_t> want(static_cast<size_t>(m * n)), got(static_cast<size_t>(m * n));
    MatmulI8Ref(a.data(), m, k, w.data(), n, want.data());
    auto packed = backend->PackWeight(w.data(), k, n);
    backend->MatmulI8(a.data(), m, *packed, got.data());
    EXPECT_TRUE(test::SameBits(want, got)) << "pattern " << pattern;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, MatmulI8Cpu, ::testing::ValuesIn(test::IsasUnderTest()),
                         test::IsaParamName);

}  // namespace
}  // namespace dv
