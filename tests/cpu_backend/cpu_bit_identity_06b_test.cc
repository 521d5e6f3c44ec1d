// Bit identity of the cpu backend on the synthetic qwen3-0.6b preset (Qwen3-0.6B's shapes):
// every step's logits equal the reference backend's, alone and in a batch, at every ISA level.
// Label slow: the reference backend takes seconds per token at this size.
#include "tests/cpu_backend/cpu_bit_identity.h"

namespace dv::test {
namespace {

TEST_P(CpuBitIdentity, Synthetic06bEveryStep) {
  const Artifact& a = Synthetic("qwen3-0.6b");
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
  const Case solo{{prompt}, 6, 0};
  const auto& want = ReferenceResult("0.6b", a, solo);
  for (int threads : {1, 2, 4}) {
    auto cpu = MakeCpuBackend({threads, GetParam(), true, std::nullopt, true});
    ExpectSameSteps(want, Generate(a, *cpu, solo), "0.6b " + std::to_string(threads) + " threads");
  }
  auto cpu = MakeCpuBackend({2, GetParam(), true, std::nullopt, true});
  const Case batch{Batch(prompt, 3, 151936, 5, 1), 3, 0};
  ExpectSameSteps(ReferenceResult("0.6b batch", a, batch), Generate(a, *cpu, batch),
                  "0.6b batch 4");
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, CpuBitIdentity, ::testing::ValuesIn(IsasUnderTest()),
                         IsaParamName);

}  // namespace
}  // namespace dv::test
