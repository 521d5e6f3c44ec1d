// The "alive" check of synthetic models, shared by the unit and slow test executables.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

#include "engine/backends/reference_backend.h"
#include "engine/generate.h"
#include "engine/model_source.h"

namespace dv::test {

// Over a 256-token greedy run the argmax must wander (not constant, not a short loop from the
// start) and the raw int32 logits must stay far from saturation.
inline void ExpectAlive(const std::string& preset, int64_t steps) {
  auto artifact = LoadSynthetic(preset, 0);
  auto backend = MakeReferenceBackend();
  IntQwen3 model(artifact->weights(), *backend);
  GenerationOptions opt;
  opt.max_new = steps;
  opt.keep_logits = true;
  const auto res = GenerateGreedy(model, {{11, 48, 85, 122, 159, 196, 233, 270}}, opt);
  const std::set<int32_t> distinct(res[0].tokens.begin(), res[0].tokens.end());
  EXPECT_GE(distinct.size(), 16u) << preset << ": greedy decoding is (nearly) constant";
  const int64_t ceiling = model.config().hidden * 127 * 128;  // |logit| can never exceed this
  int64_t max_abs = 0;
  for (const auto& step : res[0].logits) {
    for (int32_t v : step) max_abs = std::max<int64_t>(max_abs, std::llabs(v));
  }
  EXPECT_LT(max_abs, ceiling / 8) << preset << ": logits near saturation";
  EXPECT_GT(max_abs, 0) << preset << ": logits all zero";
  EXPECT_EQ(model.wrap_events(), 0) << preset << ": the synthetic scales must not wrap int64";
}

}  // namespace dv::test
