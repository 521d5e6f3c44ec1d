// The prepared synthetic models (prepare/prepared_synthetic.h, a scenario's `prepared:<preset>`
// fallback): their artifact bytes and their first 64 greedy steps from a fixed prompt, pinned,
// on every execution path of this machine (and of aarch64 and s390x under qemu: CROSS). The
// qwen3-0.6b one, the demo's built-in model, is label slow (minutes to prepare). Each test gets
// its own cache folder, so the cached copy is made here, not taken from an earlier run.
//
// Regenerate after a deliberate change of the recipe, the calibration forward or the synthetic
// checkpoints: run the test and take the values it prints.
#include "tests/prepare/prepared_pin.h"

namespace dv {
namespace {

using test::PreparedPin;

class PreparedSyntheticTiny : public ::testing::TestWithParam<PreparedPin> {};
TEST_P(PreparedSyntheticTiny, PinnedBytesAndChains) { test::ExpectPin(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Tiny, PreparedSyntheticTiny,
                         ::testing::Values(PreparedPin{
                             "qwen3-tiny",
                             "d9b6b5228f8679aeb1598bd3364a7078dfbc0285ba24b30a199797d17f4ec8bd",
                             "5551289ec5859aa4343c5ffefcd1b94823721c64b220db9258875aca12c29e4f",
                             "f5a02eb54e515de335580c9c676d394eb278989bdf12924ca8ac7b3951d60bd6"}),
                         [](const auto&) { return std::string("qwen3_tiny"); });

}  // namespace
}  // namespace dv
