// The reference backend's loops (transposed-weight dot products, block-wise attention, written so
// that the compiler vectorizes them) against the obvious definitions: MatmulI8Ref's triple loop
// and RowOps::Attend. Random data over shapes around the loops' blocks (4 rows, 32 rows, 16 and
// 4 slots, channels past a multiple of 4), wrapped attention scales included; integer results
// must be equal.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "engine/backends/reference_backend.h"
#include "engine/backends/row_ops.h"
#include "tests/cpu_backend/cpu_test_support.h"

namespace dv {
namespace {

TEST(ReferenceBackend, MatmulEqualsTheTripleLoop) {
  test::TestRng rng(7);
  auto backend = MakeReferenceBackend();
  for (int64_t m : {1, 2, 3, 4, 5, 8, 31, 32, 33, 67}) {
    // k around the 256-byte prefetch chunks too (300, 2051), the prefetch running past a
    // column's end into the next one and past the weight's last byte.
    for (auto [k, n] : {std::pair<int64_t, int64_t>{1, 1},
                        {3, 5},
                        {64, 17},
                        {130, 70},
                        {300, 11},
                        {1024, 9},
                        {2051, 4}}) {
      std::vector<int8_t> a(static_cast<size_t>(m * k)), w(static_cast<size_t>(k * n));
      for (auto& x : a) x = static_cast<int8_t>(rng.Uniform(-128, 127));
      for (auto& x : w) x = static_cast<int8_t>(rng.Uniform(-128, 127));
      std::vector<int32_t> want(static_cast<size_t>(m * n)), got(want.size(), -1);
      MatmulI8Ref(a.data(), m, k, w.data(), n, want.data());
      auto packed = backend->PackWeight(w.data(), k, n);
      backend->MatmulI8(a.data(), m, *packed, got.data());
      ASSERT_TRUE(test::SameBits(want, got)) << "m " << m << " k " << k << " n " << n;
    }
  }
}

// Which of the GCC clones of the loops (engine/backends/reference_backend.cc) this CPU selects:
// the emulated runs of tests/engine/CMakeLists.txt check the line it prints.
TEST(ReferenceBackend, ReportsItsClone) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  // The resolver's own order: the first clone the CPU supports.
  const char* clone = __builtin_cpu_supports("x86-64-v4") ? "x86-64-v4"
                      : __builtin_cpu_supports("avx2")    ? "avx2"
                                                          : "default";
  std::printf("reference backend clone: %s\n", clone);
  RecordProperty("clone", clone);
#else
  GTEST_SKIP() << "one build of the loops here (GCC's target_clones on x86-64 only)";
#endif
}

TEST(ReferenceBackend, MatmulAtTheExtremes) {
  // Every product at +-127*128 over the largest inner dimension the shape bound allows.
  const int64_t k = ((int64_t{1} << 31) - 1) / (127 * 128), m = 5, n = 3;
  auto backend = MakeReferenceBackend();
  for (int pattern = 0; pattern < 2; ++pattern) {
    std::vector<int8_t> a(static_cast<size_t>(m * k), pattern ? 127 : -128);
    std::vector<int8_t> w(static_cast<size_t>(k * n), pattern ? -127 : 127);
    std::vector<int32_t> want(static_cast<size_t>(m * n)), got(want.size());
    MatmulI8Ref(a.data(), m, k, w.data(), n, want.data());
    auto packed = backend->PackWeight(w.data(), k, n);
    backend->MatmulI8(a.data(), m, *packed, got.data());
    EXPECT_TRUE(test::SameBits(want, got)) << "pattern " << pattern;
  }
}

TEST(ReferenceBackend, AttendEqualsThePlainDefinition) {
  test::TestRng rng(11);
  const RowOps plain;
  auto backend = MakeReferenceBackend();
  const RowOps& ops = backend->row_ops();
  for (int64_t d : {2, 6, 32, 128, 130}) {
    for (int64_t slots : {1, 3, 4, 5, 15, 16, 17, 33, 100, 577}) {
      // The cache holds more slots than are visible (a prefill call's later tokens), random
      // bytes in all of them.
      const int64_t d4 = KvPaddedDim(d), cap = KvPaddedSlots(slots + 5);
      std::vector<int8_t> k(static_cast<size_t>(cap * d4), 0), v(k.size(), 0);
      for (int64_t s = 0; s < cap; ++s) {
        for (int64_t j = 0; j < d; ++j) {
          k[static_cast<size_t>(KvKOffset(s, j, d4))] = static_cast<int8_t>(rng.Uniform(-128, 127));
          v[static_cast<size_t>(KvVOffset(s, j, d4))] = static_cast<int8_t>(rng.Uniform(-128, 127));
        }
      }
      const KvHeadView view{k.data(), v.data(), d};
      for (int rep = 0; rep < 4; ++rep) {
        std::vector<int8_t> q(static_cast<size_t>(d));
        for (auto& x : q) x = static_cast<int8_t>(rng.Uniform(-128, 127));
        Dyadic scale{rng.Uniform(1 << 15, (1 << 16) - 1), rng.Uniform(0, 75)};
        if (rep == 3) scale = {static_cast<int64_t>(rng.Next()), rng.Uniform(-5, 130)};  // wrapped
        std::vector<int32_t> sa(static_cast<size_t>(slots)), sb(sa), pa(sa), pb(sa);
        std::vector<int64_t> ea(static_cast<size_t>(slots)), eb(ea);
        std::vector<int64_t> ca(static_cast<size_t>(d)), cb(ca);
        const int64_t ta =
            plain.Attend(q.data(), view, slots, scale, sa.data(), ea.data(), pa.data(), ca.data());
        const int64_t tb =
            ops.Attend(q.data(), view, slots, scale, sb.data(), eb.data(), pb.data(), cb.data());
        ASSERT_EQ(ta, tb);
        ASSERT_TRUE(test::SameBits(sa, sb)) << "scores d " << d << " slots " << slots;
        ASSERT_TRUE(test::SameBits(pa, pb)) << "probs d " << d << " slots " << slots;
        ASSERT_TRUE(test::SameBits(ca, cb)) << "ctx d " << d << " slots " << slots;
      }
    }
  }
}

}  // namespace
}  // namespace dv
