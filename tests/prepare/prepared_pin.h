// Shared by prepared_synthetic_test.cc and its slow twin: a prepared synthetic model made in a
// cache folder of its own, checked against its pins on every execution path.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/generate.h"
#include "prepare/prepared_synthetic.h"
#include "tests/engine/test_support.h"
#include "tests/support/scratch_files.h"

namespace dv::test {

struct PreparedPin {
  const char* preset;
  const char* model_safetensors;
  const char* logits_chain_at_64;
  const char* token_chain_at_64;
};

inline void PrintTo(const PreparedPin& p, std::ostream* os) { *os << p.preset; }

inline void ExpectPin(const PreparedPin& pin) {
  test_files::ScratchDir cache("prepared-cache");
  const char* old = std::getenv("DETVERIFY_CACHE");
  const std::string saved = old ? old : "";
  ::setenv("DETVERIFY_CACHE", cache.Path().c_str(), 1);
  const auto artifact = LoadPreparedSynthetic(pin.preset, 0);
  EXPECT_EQ(artifact->dir(), PreparedSyntheticCacheDir(pin.preset, 0));
  // The second load reads the cache.
  EXPECT_EQ(LoadPreparedSynthetic(pin.preset, 0)->sha256(), artifact->sha256());
  if (old) {
    ::setenv("DETVERIFY_CACHE", saved.c_str(), 1);
  } else {
    ::unsetenv("DETVERIFY_CACHE");
  }
  EXPECT_EQ(artifact->sha256(), pin.model_safetensors) << pin.preset;
  GenerationOptions g;
  g.max_new = 64;
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
  for (const auto& [name, backend] : test::EveryExecutionPath()) {
    IntQwen3 model(artifact->weights(), *backend);
    const auto res = GenerateGreedy(model, {prompt}, g);
    std::printf("[ measured ] %s on %s: logits chain @64 %s, tokens %s\n", pin.preset, name.c_str(),
                res[0].logits_chain.back().c_str(), res[0].token_chain.back().c_str());
    EXPECT_EQ(res[0].logits_chain.back(), pin.logits_chain_at_64) << name;
    EXPECT_EQ(res[0].token_chain.back(), pin.token_chain_at_64) << name;
    EXPECT_EQ(model.wrap_events(), 0) << name;
  }
}

}  // namespace dv::test
