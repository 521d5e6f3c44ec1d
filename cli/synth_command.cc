// detverify synth: write a synthetic model from an integer PRNG (no download, same bytes
// everywhere): a DetLLM-format int artifact (--format int, the default), or a Hugging Face
// Qwen3 checkpoint in BF16 (--format hf) for the float engine and prepare.
#include <cstdio>

#include "checkpoint/hf_synth.h"
#include "cli/command.h"
#include "engine/artifact.h"
#include "engine/synth.h"

namespace dv::cli {
namespace {

struct SynthOptions {
  std::string preset;
  uint64_t seed = 0;
  std::string out;
  std::string format = "int";
};

void RunSynth(const SynthOptions& o, CommandContext& ctx) {
  if (o.format == "hf") {
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
    throw UsageError("--format must be int or hf, not '" + o.format + "'");
  }
  std::printf("%s  %s/model.safetensors\n", Sha256FileHex(o.out + "/model.safetensors").c_str(),
              o.out.c_str());
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupSynthCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<SynthOptions>();
  CLI::App* cmd = app.add_subcommand("synth", "write a synthetic model from an integer PRNG");
  cmd->add_option("--preset", opt->preset,
                  "qwen3-tiny | qwen3-0.6b (--format hf also: qwen3-tiny-hd128)")
      ->required();
  cmd->add_option("--seed", opt->seed, "PRNG seed")->capture_default_str();
  cmd->add_option("--out", opt->out, "output folder")->required();
  cmd->add_option("--format", opt->format,
                  "int: DetLLM int artifact; hf: Hugging Face Qwen3 checkpoint (BF16 safetensors "
                  "+ config.json)")
      ->capture_default_str();
  cmd->callback([opt, &ctx]() { RunSynth(*opt, ctx); });
}

}  // namespace dv::cli
