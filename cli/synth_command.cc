// detverify synth: write a synthetic model from an integer PRNG (no download, same bytes
// everywhere): a DetLLM-format int artifact (--format int, the default), or a Hugging Face
// Qwen3 checkpoint in BF16 (--format hf) for the float engine and prepare, or a Llama GGUF in
// BF16 (--format gguf) as llama.cpp's converter writes one, for every verb that takes --gguf.
#include <cstdio>

#include "checkpoint/hf_synth.h"
#include "cli/command.h"
#include "engine/artifact.h"
#include "engine/synth.h"
#ifndef DV_CLI_ENGINE_ONLY
#include "gguf/gguf_synth.h"
#endif

namespace dv::cli {
namespace {

struct SynthOptions {
  std::string preset;
  uint64_t seed = 0;
  std::string out;
  std::string format = "int";
};

void RunSynth(const SynthOptions& o, CommandContext& ctx) {
  std::string written = o.out + "/model.safetensors";
  if (o.format == "gguf") {
#ifdef DV_CLI_ENGINE_ONLY
    throw UsageError("--format gguf is not part of detverify-engine (use detverify)");
#else
    const gguf::GgufSynthPreset& preset = gguf::FindGgufSynthPreset(o.preset);
    std::fprintf(stderr, "synthesizing %s (seed %llu, Llama GGUF, BF16) into %s\n",
                 preset.name.c_str(), static_cast<unsigned long long>(o.seed), o.out.c_str());
    gguf::WriteSynthGguf(preset, o.seed, o.out);
    written = o.out;
#endif
  } else if (o.format == "hf") {
    const HfSynthPreset& preset = FindHfSynthPreset(o.preset);
    std::fprintf(stderr, "synthesizing %s (seed %llu, Hugging Face BF16) into %s\n",
                 preset.name.c_str(), static_cast<unsigned long long>(o.seed), o.out.c_str());
    WriteHfSynthCheckpoint(preset, o.seed, o.out);
  } else if (o.format == "int") {
    const SynthPreset& preset = FindSynthPreset(o.preset);
    std::fprintf(stderr, "synthesizing %s (seed %llu) into %s\n", preset.name.c_str(),
                 static_cast<unsigned long long>(o.seed), o.out.c_str());
    WriteSynthArtifact(preset, o.seed, o.out);
  } else {
    throw UsageError("--format must be int, hf or gguf, not '" + o.format + "'");
  }
  std::printf("%s  %s\n", Sha256FileHex(written).c_str(), written.c_str());
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupSynthCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<SynthOptions>();
  CLI::App* cmd = app.add_subcommand("synth", "write a synthetic model from an integer PRNG");
  cmd->add_option("--preset", opt->preset,
                  "int, hf: qwen3-tiny | qwen3-0.6b (hf also: qwen3-tiny-hd128); "
                  "gguf: llama-tiny | smollm2-135m")
      ->required();
  cmd->add_option("--seed", opt->seed, "PRNG seed")->capture_default_str();
  cmd->add_option("--out", opt->out, "output folder (--format gguf: output file)")->required();
  cmd->add_option("--format", opt->format,
                  "int: DetLLM int artifact; hf: Hugging Face Qwen3 checkpoint (BF16 safetensors "
                  "+ config.json); gguf: a Llama GGUF file in BF16 (token ids only, no tokenizer)")
      ->capture_default_str();
  cmd->callback([opt, &ctx]() { RunSynth(*opt, ctx); });
}

}  // namespace dv::cli
