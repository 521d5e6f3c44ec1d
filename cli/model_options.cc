#include "cli/model_options.h"

#include <cstdio>

#include "cli/command.h"
#include "engine/model_source.h"
#ifndef DV_CLI_ENGINE_ONLY
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_synth.h"
#include "gguf/gguf_checkpoint.h"
#endif

namespace dv::cli {

void ModelOptions::AddTo(CLI::App* cmd) {
  auto* a = cmd->add_option("--artifact", artifact,
                            "int artifact folder (model.safetensors + config.json)");
  auto* p = cmd->add_option("--preset", preset,
                            "built-in synthetic model: qwen3-tiny | qwen3-0.6b (float engine: also "
                            "qwen3-tiny-hd128)");
  a->excludes(p);
#ifndef DV_CLI_ENGINE_ONLY
  auto* h = cmd->add_option("--hf", hf,
                            "Hugging Face checkpoint folder (config.json + safetensors; the float "
                            "engine)");
  h->excludes(a)->excludes(p);
  auto* g = cmd->add_option("--gguf", gguf,
                            "Llama-family GGUF model file (F32/F16/BF16/Q8_0/Q4_0/Q4_1; the float "
                            "engine, weights dequantized to float32)");
  g->excludes(a)->excludes(p)->excludes(h);
#endif
  cmd->add_option("--seed", seed, "seed of the synthetic model")->capture_default_str();
}

std::unique_ptr<Artifact> ModelOptions::Load(std::string* source) const {
  if (!artifact.empty()) {
    if (source) *source = "artifact:" + artifact;
    return Artifact::Load(artifact);
  }
  if (!hf.empty()) {
    throw UsageError(
        "--hf is a float checkpoint: run it with --engine float (the int8 engine "
        "needs an int artifact, --artifact DIR or --preset NAME)");
  }
  if (!gguf.empty()) {
    throw UsageError(
        "--gguf is a float model: run it with --engine float (the int8 engine needs an int "
        "artifact, --artifact DIR or --preset NAME)");
  }
  if (preset.empty()) throw UsageError("give --artifact DIR or --preset NAME");
  if (source) *source = "synthetic:" + preset + " seed=" + std::to_string(seed);
  return LoadSynthetic(preset, seed, [](const std::string& dir) {
    std::fprintf(stderr, "detverify: synthesizing the model into %s (once)\n", dir.c_str());
  });
}

#ifndef DV_CLI_ENGINE_ONLY
std::unique_ptr<FloatCheckpoint> ModelOptions::LoadFloat(std::string* source) const {
  if (!hf.empty()) {
    if (source) *source = "hf:" + hf;
    return OpenHfCheckpoint(hf);
  }
  if (!gguf.empty()) {
    if (source) *source = "gguf:" + gguf;
    return gguf::OpenGgufCheckpoint(gguf, [&] {
      std::fprintf(stderr, "detverify: dequantizing %s to float32\n", gguf.c_str());
    });
  }
  if (!artifact.empty()) {
    throw UsageError(
        "--artifact is an int artifact, which the float engine cannot run: give "
        "--hf DIR (a Hugging Face checkpoint), --gguf FILE or --preset NAME");
  }
  if (preset.empty()) throw UsageError("give --hf DIR, --gguf FILE or --preset NAME");
  if (source) *source = "synthetic-hf:" + preset + " seed=" + std::to_string(seed);
  return OpenHfSynthetic(preset, seed, PrintHfSynthesisNotice);
}
#endif

std::vector<int32_t> ParseIds(const std::string& text, const std::string& what) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    std::string item = text.substr(i, j - i);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty() && j == text.size() && !ids.empty()) break;
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 0 || v > INT32_MAX) {
      throw UsageError(what + ": '" + item + "' is not a token id");
    }
    ids.push_back(static_cast<int32_t>(v));
    i = j + 1;
  }
  return ids;
}

std::string FloatDTypeOn(BackendKind backend, const std::string& name, const std::string& dtype) {
  if (backend == BackendKind::kCuda) {
#ifdef DV_CLI_FLOAT_CUDA
    if (!dtype.empty() && dtype != "fp16") {
      throw UsageError("the float engine on cuda runs fp16, not --dtype " + dtype);
    }
    return "fp16";
#else
    throw UsageError("this build has no float engine on cuda (built without DETVERIFY_CUDA)");
#endif
  }
  if (backend != BackendKind::kCpu) {
    throw UsageError(
        "the float engine runs on the cpu (OpenBLAS) or cuda (cuBLAS fp16), not --backend " + name);
  }
  return dtype.empty() ? "fp32" : dtype;
}

}  // namespace dv::cli
