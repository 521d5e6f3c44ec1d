// BlockRowOps (the cuda backend's row programs on emulated blocks, every model test's "block/13"
// execution path) allocates nothing for a row up to block::HostBlock::kInlineThreads threads:
// the block's shared slots live in the block object. Every allocation of this executable counts
// (tests/support/allocation_counter.h).
#include <gtest/gtest.h>

#include <vector>

#include "engine/backends/block_row_ops.h"
#include "tests/support/allocation_counter.h"
#include "tests/support/row_ops_checks.h"

namespace dv {
namespace {

TEST(BlockRowOpsAllocation, NoneUpToTheInlineWidth) {
  test::TestRng rng(5);
  const int64_t n = 1024;
  const std::vector<int32_t> x32 = test::RandomRowI32(n, rng);
  std::vector<int64_t> x64(static_cast<size_t>(n)), scales(static_cast<size_t>(n), 1 << 16);
  std::vector<int32_t> y32(static_cast<size_t>(n));
  std::vector<int8_t> y8(static_cast<size_t>(n));
  for (int threads : {1, 13, block::HostBlock::kInlineThreads}) {
    const BlockRowOps ops(threads);
    const int64_t before = test::AllocationsSoFar();
    ops.RmsNorm(x32.data(), n, y32.data());
    ops.RmsNormGamma(x32.data(), n, scales.data(), x64.data());
    ops.QuantI8(x64.data(), n, 3, 20, y8.data(), nullptr);
    ops.Swiglu(x32.data(), y32.data(), n, 7, x64.data());
    ops.GreedyPick(x32.data(), scales.data(), n);
    EXPECT_EQ(test::AllocationsSoFar() - before, 0) << threads << " threads";
  }
  // Wider blocks take their slots from the heap (and still work).
  const BlockRowOps wide(block::HostBlock::kInlineThreads + 1);
  const int64_t before = test::AllocationsSoFar();
  wide.RmsNorm(x32.data(), n, y32.data());
  EXPECT_GT(test::AllocationsSoFar() - before, 0);
}

}  // namespace
}  // namespace dv
