// Shared by the cpu backend's bit-identity tests: runs of the same rows on the reference backend
// (computed once per case) and on the cpu backend, compared step by step.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>

#include "engine/artifact.h"
#include "engine/backends/cpu_backend.h"
#include "engine/backends/reference_backend.h"
#include "engine/co_prompts.h"
#include "engine/generate.h"
#include "engine/model_source.h"
#include "engine/synth.h"
#include "tests/cpu_backend/cpu_test_support.h"
#include "tests/engine/test_support.h"
#include "tests/support/scratch_files.h"

namespace dv::test {

struct Case {
  std::vector<std::vector<int32_t>> rows;
  int64_t steps = 0;
  int64_t split = 0;
};

inline std::vector<RowResult> Generate(const Artifact& artifact, Backend& backend, const Case& c) {
  IntQwen3 model(artifact.weights(), backend);
  GenerationOptions opt;
  opt.max_new = c.steps;
  opt.split = c.split;
  opt.keep_logits = true;
  return GenerateGreedy(model, c.rows, opt);
}

// Every row, every step: logits and tokens equal; the first divergence is reported.
inline void ExpectSameSteps(const std::vector<RowResult>& want, const std::vector<RowResult>& got,
                            const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t r = 0; r < want.size(); ++r) {
    ASSERT_EQ(want[r].logits.size(), got[r].logits.size()) << what;
    for (size_t s = 0; s < want[r].logits.size(); ++s) {
      ASSERT_TRUE(test::SameBits(want[r].logits[s], got[r].logits[s]))
          << what << ": row " << r << ", logits of step " << s;
      ASSERT_EQ(want[r].tokens[s], got[r].tokens[s]) << what << ": row " << r << ", step " << s;
    }
    ASSERT_EQ(want[r].logits_chain.back(), got[r].logits_chain.back()) << what;
  }
}

// The reference backend's result of each (model, case), computed once for all parameters.
inline const std::vector<RowResult>& ReferenceResult(const std::string& key,
                                                     const Artifact& artifact, const Case& c) {
  static std::map<std::string, std::vector<RowResult>> cache;
  auto it = cache.find(key);
  if (it == cache.end()) {
    auto ref = MakeReferenceBackend();
    it = cache.emplace(key, Generate(artifact, *ref, c)).first;
  }
  return it->second;
}

inline void ExpectEveryThreadCountMatches(const std::string& key, const Artifact& artifact,
                                          const Case& c, CpuIsa isa) {
  const auto& want = ReferenceResult(key, artifact, c);
  for (int threads : {1, 2, 3, 4}) {
    auto cpu = MakeCpuBackend({threads, isa, true, std::nullopt, true});
    ExpectSameSteps(
        want, Generate(artifact, *cpu, c),
        key + " " + std::string(CpuIsaName(isa)) + " " + std::to_string(threads) + " threads");
  }
}

inline std::vector<std::vector<int32_t>> Batch(const std::vector<int32_t>& ours, int64_t count,
                                               int64_t vocab, uint64_t seed, int64_t position) {
  CoPromptSpec spec;
  spec.seed = seed;
  spec.count = count;
  spec.min_len = 2;
  spec.max_len = 30;
  return ComposeBatch(ours, MakeCoPrompts(spec, vocab), position);
}

class CpuBitIdentity : public IsaTest {
 protected:
  // A DetLLM fixture of tests/data/detllm, loaded once.
  static const Artifact& Fixture(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Artifact>> loaded;
    auto& a = loaded[name];
    if (!a) a = Artifact::Load(test::FixtureDir(name));
    return *a;
  }
  static const Artifact& Synthetic(const std::string& preset) {
    static std::map<std::string, std::unique_ptr<Artifact>> loaded;
    auto& a = loaded[preset];
    if (!a) a = LoadSynthetic(preset, 0);
    return *a;
  }
  // Odd shapes, synthesized once into a temporary folder.
  static const Artifact& Odd(const std::string& name) {
    // Declared first, so removed after the artifacts that map files in them.
    static std::map<std::string, std::unique_ptr<test_files::ScratchDir>> dirs;
    static std::map<std::string, std::unique_ptr<Artifact>> loaded;
    auto& a = loaded[name];
    if (!a) {
      // layers, hidden, q heads, kv heads, head dim, intermediate, vocab, max_pos
      const std::map<std::string, ModelConfig> shapes = {
          {"odd-a", {2, 72, 3, 1, 6, 100, 77, 96}},
          {"odd-b", {1, 33, 4, 2, 10, 45, 131, 64}},
          {"odd-c", {2, 130, 2, 2, 66, 190, 1000, 80}},
      };
      auto& scratch = dirs[name];
      scratch = std::make_unique<test_files::ScratchDir>("cpu-" + name);
      const std::string dir = scratch->Path().string();
      WriteSynthArtifact({name, shapes.at(name)}, 3, dir);
      a = Artifact::Load(dir);
    }
    return *a;
  }
};

}  // namespace dv::test
