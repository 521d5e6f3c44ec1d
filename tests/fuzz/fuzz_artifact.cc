// The int artifact loader (engine/artifact.h) with an arbitrary config.json beside a real
// model.safetensors (DetLLM's tiny-a fixture): every dimension, shift, max_pos, rope_frac_bits,
// eos_token_id and layer count of config.json is checked against its range and against the
// tensors before anything is used.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/expected_error.h"
#include "engine/artifact.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

std::string g_dir;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* model = std::getenv("DV_FUZZ_ARTIFACT_MODEL");
  const std::string source =
      model && *model ? model
                      : std::string(DV_FUZZ_SHARED_DIR "/detllm/fixtures/tiny-a/model.safetensors");
  g_dir = dv::fuzz::ScratchDir() + "/artifact";
  std::filesystem::create_directories(g_dir);
  std::filesystem::remove(g_dir + "/model.safetensors");
  std::filesystem::create_symlink(std::filesystem::absolute(source), g_dir + "/model.safetensors");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dv::fuzz::WriteScratchFile(g_dir + "/config.json", dv::fuzz::AsText(data, size));
  try {
    (void)dv::Artifact::Load(g_dir);
  } catch (const dv::ExpectedError&) {
  }
  return 0;
}
