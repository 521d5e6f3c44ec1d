// ForwardRow's all_scale_m / all_scale_k (the logits' per-token row scale, which compare and ppl
// need to turn int32 logits into real ones) are DetLLM's final.xm / final.xk of the prompt pass
// (the fixtures' trace.safetensors), on every execution path, alone and beside another row.
#include <gtest/gtest.h>

#include "engine/artifact.h"
#include "engine/model.h"
#include "tests/engine/test_support.h"

namespace dv {
namespace {

class LogitScaleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LogitScaleTest, IsDetllmsFinalRowScale) {
  const std::string dir = test::FixtureDir(GetParam());
  const auto artifact = Artifact::Load(dir);
  const MappedFile trace_file = MappedFile::Open(dir + "/trace.safetensors");
  const auto trace = ParseSafetensors(trace_file.bytes(), trace_file.path());
  const std::vector<int64_t> want_m = DecodeIntTensor(trace.at("prefill.final.xm"));
  const std::vector<int64_t> want_k = DecodeIntTensor(trace.at("prefill.final.xk"));
  const auto prompt =
      test::LoadJson(dir + "/expected.json")["prompt_ids"].get<std::vector<int32_t>>();
  const int64_t n = static_cast<int64_t>(prompt.size());
  ASSERT_EQ(static_cast<int64_t>(want_m.size()), n);
  for (const auto& [path, backend] : test::EveryExecutionPath()) {
    IntQwen3 model(artifact->weights(), *backend);
    KvCache cache(model.config(), n, model.backend()), other(model.config(), 3, model.backend());
    std::vector<int32_t> logits(static_cast<size_t>(n * model.config().vocab));
    std::vector<int64_t> m(static_cast<size_t>(n)), k(static_cast<size_t>(n));
    const int32_t ids[3] = {5, 6, 7};
    ForwardRow rows[2] = {{&other, ids, 3, nullptr, nullptr},
                          {&cache, prompt.data(), n, nullptr, logits.data(), m.data(), k.data()}};
    model.Forward(rows);
    EXPECT_EQ(m, want_m) << path;
    EXPECT_EQ(k, want_k) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LogitScaleTest, ::testing::ValuesIn(test::kDetllmFixtures),
                         test::FixtureParamName);

}  // namespace
}  // namespace dv
