// The installed SmolLM2-135M-Instruct GGUF (gguf/model_cache.h), for the tests that need a trained
// model: each skips, visibly and naming the path and how to install the model, where it is absent.
// Header-only; the tests that include it link dv_gguf.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gguf/model_cache.h"

namespace dv::test {

// The message of the skip where the model is not at `path`.
inline std::string SmolLM2SkipReason(const std::string& path) {
  return "SmolLM2 GGUF not installed at " + path +
         " (run scripts/install_deps.sh --with-models, or set DETVERIFY_MODELS)";
}

}  // namespace dv::test

// Declares `const std::string path` (the model's path; a test may use it or not) and skips the
// test when no file is there.
#define DV_REQUIRE_SMOLLM2(path)                                       \
  [[maybe_unused]] const std::string path = ::dv::gguf::SmolLM2Path(); \
  if (!std::filesystem::is_regular_file(path)) {                       \
    GTEST_SKIP() << ::dv::test::SmolLM2SkipReason(path);               \
  }
