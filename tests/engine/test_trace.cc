// Intermediate-tensor agreement with DetLLM's trace of tiny-a (trace.safetensors, TRACE.md):
// every tensor the engine records during the prompt pass and the first decode step must equal
// the reference's, so a departure is reported at its first operation rather than at the logits.
#include <gtest/gtest.h>

#include <set>

#include "engine/artifact.h"
#include "engine/backends/reference_backend.h"
#include "engine/model.h"
#include "tests/engine/test_support.h"

namespace dv {
namespace {

// Tensors TRACE.md stores per head as [B, heads, T, x]; the engine records them [T, heads, x].
const std::set<std::string> kHeadMajor = {"q_rope", "q_smooth", "q8",     "qm",    "qk",
                                          "k_rope", "k8",       "v8",     "sm_raw", "sk_raw",
                                          "sm",     "sk",       "exp_tpos", "probs"};

struct Recorded {
  std::string name;
  std::vector<int64_t> dims, values;
};

class RecordingSink : public TraceSink {
 public:
  void Record(const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& values) override {
    tensors.push_back({name, dims, values});
  }
  std::vector<Recorded> tensors;
};

// The reference tensor in the engine's layout.
std::vector<int64_t> ReferenceInEngineLayout(const TensorView& ref, const Recorded& got) {
  std::vector<int64_t> v = DecodeIntTensor(ref);
  const std::string leaf = got.name.substr(got.name.rfind('.') + 1);
  if (!kHeadMajor.count(leaf)) return v;
  // ref [1, heads, T, x] -> [T, heads, x]
  const int64_t heads = ref.shape[1], t_len = ref.shape[2], x = ref.shape.size() > 3 ? ref.shape[3] : 1;
  std::vector<int64_t> out(v.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t t = 0; t < t_len; ++t)
      for (int64_t i = 0; i < x; ++i)
        out[static_cast<size_t>((t * heads + h) * x + i)] = v[static_cast<size_t>((h * t_len + t) * x + i)];
  return out;
}

TEST(TraceTinyA, EveryIntermediateOfPrefillAndFirstDecode) {
  const std::string dir = test::FixtureDir("tiny-a");
  auto artifact = Artifact::Load(dir);
  MappedFile trace_file = MappedFile::Open(dir + "/trace.safetensors");
  const auto trace = ParseSafetensors(trace_file.bytes(), trace_file.path());
  const auto expected = test::LoadJson(dir + "/expected.json");
  auto backend = MakeReferenceBackend();
  IntQwen3 model(artifact->weights(), *backend);
  const int64_t vocab = model.config().vocab;

  const auto prompt = expected["prompt_ids"].get<std::vector<int32_t>>();
  KvCache cache(model.config(), static_cast<int64_t>(prompt.size()) + 1);
  std::vector<int32_t> logits(prompt.size() * static_cast<size_t>(vocab));
  std::vector<int32_t> last(static_cast<size_t>(vocab));

  int compared = 0;
  auto check_phase = [&](const std::string& phase, const RecordingSink& sink) {
    for (const Recorded& got : sink.tensors) {
      auto it = trace.find(phase + "." + got.name);
      ASSERT_NE(it, trace.end()) << "trace has no tensor " << phase << "." << got.name;
      const std::vector<int64_t> want = ReferenceInEngineLayout(it->second, got);
      ASSERT_EQ(want.size(), got.values.size()) << phase << "." << got.name << ": size";
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got.values[i], want[i])
            << "first departure: " << phase << "." << got.name << " at flat index " << i;
      }
      ++compared;
    }
  };

  RecordingSink prefill;
  ForwardRow row{&cache, prompt.data(), static_cast<int64_t>(prompt.size()), last.data(),
                 logits.data()};
  model.Forward({&row, 1}, &prefill);
  check_phase("prefill", prefill);

  const int32_t first = model.GreedyPick(last.data());
  EXPECT_EQ(first, expected["tokens"][0].get<int32_t>());
  RecordingSink decode;
  std::vector<int32_t> decode_logits(static_cast<size_t>(vocab));
  ForwardRow step{&cache, &first, 1, last.data(), decode_logits.data()};
  model.Forward({&step, 1}, &decode);
  check_phase("decode", decode);

  // Both phases, every layer: a test that compared nothing would prove nothing.
  EXPECT_GE(compared, 2 * (2 + 2 * 50));
}

}  // namespace
}  // namespace dv
