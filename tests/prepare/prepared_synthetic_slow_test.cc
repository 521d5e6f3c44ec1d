// The demo's built-in model: the synthetic qwen3-0.6b float checkpoint prepared with the built-in
// calibration (the `prepared:qwen3-0.6b` fallback of scenarios/demo.yaml), its bytes and its first
// 64 greedy steps pinned on every execution path (label slow: minutes to prepare, and to run on
// the reference backend). See prepared_synthetic_test.cc for regenerating.
#include "tests/prepare/prepared_pin.h"

#include "engine/backends/backend_registry.h"

namespace dv {
namespace {

// The demo's int8 rows on this model: the first 64 Qwen3 tokens of Sonnet 18 (demo.yaml's
// expect_ids), 512 greedy steps on the cpu backend, end on the hashes demo.yaml pins for it.
TEST(PreparedSynthetic06b, DemoHashes) {
  test_files::ScratchDir cache("prepared-demo");
  ::setenv("DETVERIFY_CACHE", cache.Path().c_str(), 1);
  const auto artifact = LoadPreparedSynthetic("qwen3-0.6b", 0);
  ::unsetenv("DETVERIFY_CACHE");
  const std::vector<int32_t> sonnet = {
      2016, 541,   358,   9429, 39244, 311,  264,   7324, 594, 1899,  5267,  1001,  283,
      1947, 803,   16690, 323,  803,   6797, 349,   510,  49,  1384,  28492, 653,   26025,
      279,  75645, 67443, 315,  3217,  345,  3036,  7324, 594, 25064, 51577, 678,   2238,
      2805, 264,   2400,  280,  49882, 4107, 2238,  4017, 279, 7912,  315,   22274, 64780,
      345,  3036,  3545,  374,  806,   6623, 90579, 5103, 76,  4172,  280,   3036};
  const auto backend = MakeBackend("cpu");
  IntQwen3 model(artifact->weights(), *backend);
  GenerationOptions g;
  g.max_new = 512;
  const auto res = GenerateGreedy(model, {sonnet}, g);
  EXPECT_EQ(res[0].logits_chain.back().substr(0, 12), "45070ddd7b3a");
  EXPECT_EQ(res[0].token_chain.back().substr(0, 12), "0b88c59eac1a");
  const std::string demo = test_files::ReadFile(std::string(std::getenv("DETVERIFY_SOURCE_DIR")) +
                                                "/scenarios/demo.yaml");
  EXPECT_NE(demo.find("{ artifact: " + artifact->sha256().substr(0, 16) +
                      ", steps: 512, logits: 45070ddd7b3a, tokens: 0b88c59eac1a }"),
            std::string::npos);
}

TEST(PreparedSynthetic06b, PinnedBytesAndChains) {
  test::ExpectPin({"qwen3-0.6b", "ba1ab5536ae6b518f1c822080742b05d052e23d5e4d74eb095c165bcba16a29d",
                   "df83d0f5f24f763a5a70c901380d2a3fab0e4ab485bd688e8f4b9e8361162a12",
                   "af780c376a1ed90e1a3018bc1cb56281a3587d32f01e3ea6492d58cd518207aa"});
}

}  // namespace
}  // namespace dv
