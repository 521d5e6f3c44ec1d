// The cuda backend's row programs (engine/backends/block_row_ops.h) on emulated blocks of 1 to
// 1,024 threads against the plain definitions (RowOps), operation by operation
// (tests/support/row_ops_checks.h): the thread-to-element mapping and the reduction trees must
// give the plain loops' bits at every block size, short rows with idle threads included. Whole
// models through them: the "block/13" execution path of every model test (test_support.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/backends/block_row_ops.h"
#include "engine/backends/row_ops.h"
#include "tests/support/row_ops_checks.h"

namespace dv {
namespace {

class BlockRowOpsTest : public ::testing::TestWithParam<int> {
 protected:
  const RowOps plain_{};
  const BlockRowOps block_{GetParam()};
};

TEST_P(BlockRowOpsTest, RmsNormAndGamma) { test::CheckRmsNormAndGamma(plain_, block_); }
TEST_P(BlockRowOpsTest, QuantI8) { test::CheckQuantI8(plain_, block_); }
TEST_P(BlockRowOpsTest, RequantI32InPlaceAndNot) {
  test::CheckRequantI32InPlaceAndNot(plain_, block_);
}
TEST_P(BlockRowOpsTest, RequantI8RowColumn) { test::CheckRequantI8RowColumn(plain_, block_); }
TEST_P(BlockRowOpsTest, RequantI8StaticRow) { test::CheckRequantI8StaticRow(plain_, block_); }
TEST_P(BlockRowOpsTest, RequantI8StaticColumns) {
  test::CheckRequantI8StaticColumns(plain_, block_);
}
TEST_P(BlockRowOpsTest, GreedyPickWithTiesAndEdges) {
  test::CheckGreedyPickWithTiesAndEdges(plain_, block_);
}
TEST_P(BlockRowOpsTest, AddResidual) { test::CheckAddResidual(plain_, block_); }
TEST_P(BlockRowOpsTest, MulColumnsAndRope) { test::CheckMulColumnsAndRope(plain_, block_); }
TEST_P(BlockRowOpsTest, MultiplierEdges) { test::CheckMultiplierEdges(plain_, block_); }
TEST_P(BlockRowOpsTest, Swiglu) { test::CheckSwiglu(plain_, block_); }
TEST_P(BlockRowOpsTest, Attend) { test::CheckAttend(plain_, block_); }
TEST_P(BlockRowOpsTest, AttendGroup) { test::CheckAttendGroup(plain_, {&block_}); }

// The embedding row (ResidualFromDelta), which RowOps does not carry.
TEST_P(BlockRowOpsTest, EmbeddingRow) {
  test::TestRng rng(41);
  for (int rep = 0; rep < 30; ++rep) {
    for (int64_t n : test::kLengths) {
      const auto e8 = test::RandomI8(static_cast<size_t>(n), rng);
      const int64_t m =
          rng.Uniform(0, 5) == 0 ? static_cast<int64_t>(rng.Next()) : rng.Uniform(1, 1 << 16);
      const int64_t k = rng.Uniform(-20, 60);
      std::vector<int32_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n), -7);
      const int64_t kw = ResidualFromDelta(e8.data(), n, m, k, want.data());
      block::HostBlock b(GetParam());
      const int64_t kg = block::FromDelta(b, e8.data(), n, m, k, got.data());
      ASSERT_EQ(kw, kg) << "n " << n;
      ASSERT_TRUE(test::SameBits(want, got)) << "n " << n << " m " << m;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, BlockRowOpsTest,
                         ::testing::Values(1, 2, 3, 7, 13, 32, 128, 256, 1024),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::to_string(p.param) + "_threads";
                         });

}  // namespace
}  // namespace dv
