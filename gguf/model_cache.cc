#include "gguf/model_cache.h"

#include <cstdlib>

namespace dv::gguf {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

std::string ModelCacheDir() {
  if (std::string dir = Env("DETVERIFY_MODELS"); !dir.empty()) return dir;
  if (std::string xdg = Env("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/detverify/models";
  const std::string home = Env("HOME");
  return (home.empty() ? std::string(".cache") : home + "/.cache") + "/detverify/models";
}

std::string SmolLM2Path() { return ModelCacheDir() + "/" + std::string(kSmolLM2FileName); }

}  // namespace dv::gguf
