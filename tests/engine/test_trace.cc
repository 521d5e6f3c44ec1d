// Intermediate-tensor agreement with DetLLM's traces of the fixtures (trace.safetensors: the
// prompt pass and the first decode step, every intermediate, tiny-a/TRACE.md): every tensor of
// both phases, including tiny-w2's and tiny-w2b's five mlp.down_* tensors of the down-projection
// input quantization (the W2 site), equals the reference's, on every execution path, so a
// departure is reported at its first operation rather than at the logits.
#include <gtest/gtest.h>

#include "engine/artifact.h"
#include "engine/model.h"
#include "tests/engine/test_support.h"
#include "tests/engine/trace_compare.h"

namespace dv {
namespace {

class TraceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TraceTest, EveryTensorOfPrefillAndFirstDecodeOnEveryPath) {
  const std::string dir = test::FixtureDir(GetParam());
  auto artifact = Artifact::Load(dir);
  MappedFile trace_file = MappedFile::Open(dir + "/trace.safetensors");
  const auto trace = ParseSafetensors(trace_file.bytes(), trace_file.path());
  const auto expected = test::LoadJson(dir + "/expected.json");
  const auto prompt = expected["prompt_ids"].get<std::vector<int32_t>>();

  for (const auto& [path, backend] : test::EveryExecutionPath()) {
    IntQwen3 model(artifact->weights(), *backend);
    const int64_t vocab = model.config().vocab;
    KvCache cache(model.config(), static_cast<int64_t>(prompt.size()) + 1, model.backend());
    std::vector<int32_t> logits(prompt.size() * static_cast<size_t>(vocab));
    std::vector<int32_t> last(static_cast<size_t>(vocab));

    test::RecordingSink prefill;
    ForwardRow row{&cache, prompt.data(), static_cast<int64_t>(prompt.size()), last.data(),
                   logits.data()};
    model.Forward({&row, 1}, &prefill);
    const auto a = test::ExpectPhaseMatches(trace, "prefill", prefill, cache, artifact->weights(),
                                            GetParam() + " on " + path);

    const int32_t first = model.GreedyPick(last.data());
    ASSERT_EQ(first, expected["tokens"][0].get<int32_t>()) << path;
    test::RecordingSink decode;
    std::vector<int32_t> decode_logits(static_cast<size_t>(vocab));
    ForwardRow step{&cache, &first, 1, last.data(), decode_logits.data()};
    model.Forward({&step, 1}, &decode);
    auto b = test::ExpectPhaseMatches(trace, "decode", decode, cache, artifact->weights(),
                                      GetParam() + " on " + path);
    b.insert(a.begin(), a.end());
    // Every tensor of the file, both phases and the constants: a test that compared nothing
    // would prove nothing.
    EXPECT_EQ(b.size(), trace.size()) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TraceTest, ::testing::ValuesIn(test::kDetllmFixtures),
                         test::FixtureParamName);

}  // namespace
}  // namespace dv
