// The demo's built-in model: the synthetic qwen3-0.6b float checkpoint prepared with the built-in
// calibration (the `prepared:qwen3-0.6b` fallback of scenarios/demo.yaml), its bytes and its first
// 64 greedy steps pinned on every execution path (label slow: minutes to prepare, and to run on
// the reference backend). See prepared_synthetic_test.cc for regenerating.
#include "tests/prepare/prepared_pin.h"

namespace dv {
namespace {

TEST(PreparedSynthetic06b, PinnedBytesAndChains) {
  test::ExpectPin({"qwen3-0.6b", "PENDING", "PENDING", "PENDING"});
}

}  // namespace
}  // namespace dv
