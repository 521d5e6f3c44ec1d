// The qwen3-0.6b synthetic model (Qwen3-0.6B's exact shapes) is alive over 256 greedy steps.
// About a minute on the reference backend, hence label `slow`.
#include "tests/engine/alive_check.h"

namespace dv {
namespace {

TEST(SynthAliveSlow, Qwen06b256Steps) { test::ExpectAlive("qwen3-0.6b", 256); }

}  // namespace
}  // namespace dv
