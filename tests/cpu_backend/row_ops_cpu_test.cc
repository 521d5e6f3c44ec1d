// The cpu backend's row operations (CpuRowOps) against the plain definitions (RowOps), one
// operation at a time, at every ISA level (the checks: tests/support/row_ops_checks.h), and its
// softmax and context kernels alone at their edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "engine/backends/attention_i8_cpu.h"
#include "engine/backends/cpu_divide.h"
#include "engine/backends/cpu_row_ops.h"
#include "engine/backends/row_kernels_cpu.h"
#include "engine/backends/row_ops.h"
#include "engine/ops/di_exp.h"
#include "tests/cpu_backend/cpu_test_support.h"
#include "tests/support/row_ops_checks.h"

namespace dv {
namespace {

using test::RandomKv;
using test::RandomRowI32;

class RowOpsCpu : public test::IsaTest {
 protected:
  const RowOps plain_{};
  // Constructed before SetUp can skip; a level this CPU lacks may have no kernels in this build.
  const CpuRowOps fast_{CpuSupports(GetParam()) ? GetParam() : CpuIsa::kScalar};
  // The same with the attention kernels' K/V prefetch (4 KiB ahead, the AVX2 and AVX-512
  // kernels' default distance).
  const CpuRowOps fast_prefetching_{CpuSupports(GetParam()) ? GetParam() : CpuIsa::kScalar, 4096};
};

TEST_P(RowOpsCpu, RmsNormAndGamma) { test::CheckRmsNormAndGamma(plain_, fast_); }

TEST_P(RowOpsCpu, QuantI8) { test::CheckQuantI8(plain_, fast_); }

TEST_P(RowOpsCpu, RequantI32InPlaceAndNot) { test::CheckRequantI32InPlaceAndNot(plain_, fast_); }

TEST_P(RowOpsCpu, RequantI8RowColumn) { test::CheckRequantI8RowColumn(plain_, fast_); }

TEST_P(RowOpsCpu, RequantI8StaticRow) { test::CheckRequantI8StaticRow(plain_, fast_); }

TEST_P(RowOpsCpu, RequantI8StaticColumns) { test::CheckRequantI8StaticColumns(plain_, fast_); }

TEST_P(RowOpsCpu, GreedyPickWithTiesAndEdges) {
  test::CheckGreedyPickWithTiesAndEdges(plain_, fast_);
}

TEST_P(RowOpsCpu, AddResidual) { test::CheckAddResidual(plain_, fast_); }

TEST_P(RowOpsCpu, MulColumnsAndRope) { test::CheckMulColumnsAndRope(plain_, fast_); }
TEST_P(RowOpsCpu, MultiplierEdges) { test::CheckMultiplierEdges(plain_, fast_); }

TEST_P(RowOpsCpu, Swiglu) { test::CheckSwiglu(plain_, fast_); }

// The softmax exponent kernel itself, beyond the rows Attend hands it: distances up to 2^32 - 1
// (row maximum INT32_MAX, scores down to INT32_MIN) and divisors around 2^31 and 2^32, each
// element against DiExp. (The row maximum is an int32 by the kernel's type: it is a score.)
TEST_P(RowOpsCpu, SoftmaxExpsAtTheEdgesOfInt32) {
  const RowKernels& k = RowKernelsFor(GetParam());
  test::TestRng rng(31);
  for (int32_t row_max : {INT32_MAX, 0, -12345, INT32_MIN}) {
    for (int64_t tpos : {int64_t{1}, int64_t{3}, (int64_t{1} << 31) - 1, int64_t{1} << 31,
                         (int64_t{1} << 32) - 1, int64_t{1} << 32, (int64_t{1} << 32) + 1,
                         rng.Uniform(1, int64_t{1} << 47), (int64_t{1} << 48) - 1}) {
      for (int64_t n : {1, 7, 8, 9, 17, 577}) {
        auto scores = RandomRowI32(n, rng);
        scores[0] = INT32_MIN;
        // Distances at and beside multiples of tpos, where a quotient's last bit is decided.
        for (size_t i = 1; i < scores.size(); i += 2) {
          const int64_t distance = rng.Uniform(0, 40) * tpos + rng.Uniform(-1, 1);
          if (distance >= 0 && row_max - distance >= INT32_MIN && row_max - distance <= INT32_MAX) {
            scores[i] = static_cast<int32_t>(row_max - distance);
          }
        }
        for (auto& x : scores) x = static_cast<int32_t>(std::min<int64_t>(x, row_max));
        std::vector<int64_t> want(static_cast<size_t>(n)), got(want);
        int64_t want_sum = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          want[i] = DiExp(WrapSub(scores[i], row_max), tpos);
          want_sum = WrapAdd(want_sum, want[i]);
        }
        const RowDivisor div(static_cast<uint64_t>(tpos));
        const int64_t sum =
            k.softmax_exps(scores.data(), n, row_max, tpos, div.params(), got.data());
        ASSERT_TRUE(test::SameBits(want, got)) << "row max " << row_max << " tpos " << tpos;
        ASSERT_EQ(sum, want_sum) << "row max " << row_max << " tpos " << tpos;
      }
    }
  }
}

TEST_P(RowOpsCpu, Attend) { test::CheckAttend(plain_, fast_); }

// A KV group's queries at once (the pair kernels read K and V once for two queries) against the
// plain per-query Attend: groups of 1 to 5 (odd ones end on a single query), and groups where
// one member's scale is wrapped (that pair leaves the fast path).
TEST_P(RowOpsCpu, AttendGroup) { test::CheckAttendGroup(plain_, {&fast_, &fast_prefetching_}); }

// The context kernels alone (the pair kernel and the single-query one) against the sum they
// define, over head dimensions beyond what CpuRowOps sends them (1,100 channels: more than the
// kernels keep accumulators for at once), probabilities at both ends of their range, the chunk
// edges of 32 and 64 slots.
TEST_P(RowOpsCpu, ContextKernels) {
  const AttentionI8Kernel& kernel = AttentionI8KernelFor(GetParam());
  test::TestRng rng(37);
  for (int64_t head_dim : {4, 64, 100, 128, 1100}) {
    for (int64_t slots : {1, 5, 32, 33, 64, 65, 129, 300}) {
      RandomKv kv(head_dim, slots + 3, rng);
      // 0 <= p <= 2^14 and sum p < 2^23 (the kernel's preconditions).
      std::vector<int32_t> pa(static_cast<size_t>(slots)), pb(pa);
      for (size_t s = 0; s < pa.size(); ++s) {
        pa[s] = static_cast<int32_t>(rng.Uniform(0, 3) == 0 ? 1 << 14 : rng.Uniform(0, 1 << 14));
        pb[s] = static_cast<int32_t>(rng.Uniform(0, 1) == 0 ? 0 : rng.Uniform(0, 255));
      }
      for (int64_t pf : {int64_t{-1}, int64_t{0}, int64_t{2048}}) {
        std::vector<int64_t> ca(static_cast<size_t>(head_dim), -1), cb(ca);
        if (pf < 0) {  // the single-query kernel, once per query
          kernel.context(pa.data(), kv.view.v, slots, head_dim, kv.d4, ca.data());
          kernel.context(pb.data(), kv.view.v, slots, head_dim, kv.d4, cb.data());
        } else {
          kernel.context_pair(pa.data(), pb.data(), kv.view.v, slots, head_dim, kv.d4, pf,
                              ca.data(), cb.data());
        }
        for (int64_t j = 0; j < head_dim; ++j) {
          int64_t want_a = 0, want_b = 0;
          for (int64_t s = 0; s < slots; ++s) {
            const int64_t v = kv.v[static_cast<size_t>(KvVOffset(s, j, kv.d4))];
            want_a += pa[static_cast<size_t>(s)] * v;
            want_b += pb[static_cast<size_t>(s)] * v;
          }
          ASSERT_EQ(ca[static_cast<size_t>(j)], want_a)
              << "d " << head_dim << " slots " << slots << " channel " << j;
          ASSERT_EQ(cb[static_cast<size_t>(j)], want_b)
              << "d " << head_dim << " slots " << slots << " channel " << j;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, RowOpsCpu, ::testing::ValuesIn(test::IsasUnderTest()),
                         test::IsaParamName);

}  // namespace
}  // namespace dv
