// detverify synth: write a synthetic DetLLM-format artifact (no download, same bytes everywhere).
#include <cstdio>

#include "cli/command.h"
#include "engine/artifact.h"
#include "engine/synth.h"

namespace dv::cli {
namespace {

struct SynthOptions {
  std::string preset;
  uint64_t seed = 0;
  std::string out;
};

void RunSynth(const SynthOptions& o, CommandContext& ctx) {
  const SynthPreset& preset = FindSynthPreset(o.preset);
  std::fprintf(stderr, "synthesizing %s (seed %llu) into %s\n", preset.name.c_str(),
               static_cast<unsigned long long>(o.seed), o.out.c_str());
  WriteSynthArtifact(preset, o.seed, o.out);
  std::printf("%s  %s/model.safetensors\n", Sha256FileHex(o.out + "/model.safetensors").c_str(),
              o.out.c_str());
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupSynthCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<SynthOptions>();
  CLI::App* cmd = app.add_subcommand("synth", "write a synthetic int artifact from an integer PRNG");
  cmd->add_option("--preset", opt->preset, "qwen3-tiny | qwen3-0.6b")->required();
  cmd->add_option("--seed", opt->seed, "PRNG seed")->capture_default_str();
  cmd->add_option("--out", opt->out, "output folder")->required();
  cmd->callback([opt, &ctx]() { RunSynth(*opt, ctx); });
}

}  // namespace dv::cli
