// detverify ppl: the perplexity of a text under the int engine (an artifact; its integer logits
// turned into real ones outside the core) or the float engine (a Hugging Face checkpoint), in
// windows of --ctx tokens every --stride tokens. The defaults are DetLLM's protocol (its
// eval_ppl.py: non-overlapping 2048-token segments of the whole text, each scoring its 2047
// next-token predictions), so `ppl --text wiki.test.raw` on its artifact gives its published
// number.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "checkpoint/hf_checkpoint.h"
#include "cli/command.h"
#include "cli/progress_line.h"
#include "cli/token_inputs.h"
#include "engine/artifact.h"
#include "engine/backends/backend_registry.h"
#include "fidelity/teacher_forced.h"
#include "gguf/gguf_checkpoint.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_tokenizer.h"
#include "prepare/calibration_set.h"

namespace dv::cli {
namespace {

struct PplOptions {
  std::string artifact, hf, gguf, text, ids, tokenizer, dtype = "fp32", backend = "cpu";
  int64_t ctx = 2048, stride = 0, max_windows = 0;
  int threads = 0;
  bool json = false, quiet = false;
};

void RunPpl(const PplOptions& o, CommandContext& ctx) {
  if (int{!o.artifact.empty()} + int{!o.hf.empty()} + int{!o.gguf.empty()} != 1)
    throw UsageError("give --artifact DIR, --hf DIR or --gguf FILE");
  if (o.text.empty() == o.ids.empty()) throw UsageError("give --text FILE or --ids FILE");
  const int64_t stride = o.stride > 0 ? o.stride : o.ctx;
  if (o.ctx < 2) throw UsageError("--ctx must be at least 2");
  if (stride > o.ctx) throw UsageError("--stride must not exceed --ctx");
  if (o.max_windows < 0) throw UsageError("--max-windows must be >= 0");

  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<FloatCheckpoint> checkpoint;
  int64_t vocab = 0, max_pos = 0;
  const std::string dir = o.artifact.empty() ? o.hf : o.artifact;
  if (!o.artifact.empty()) {
    artifact = Artifact::Load(o.artifact);
    vocab = artifact->weights().config.vocab;
    max_pos = artifact->weights().config.max_pos;
  } else if (!o.gguf.empty()) {
    checkpoint = gguf::OpenGgufCheckpoint(o.gguf);
    vocab = checkpoint->config().vocab;
    max_pos = checkpoint->config().max_pos;
  } else {
    checkpoint = OpenHfCheckpoint(o.hf);
    vocab = checkpoint->config().vocab;
    max_pos = checkpoint->config().max_pos;
  }
  if (o.ctx > max_pos) {
    throw UsageError("--ctx " + std::to_string(o.ctx) + " exceeds the model's " +
                     std::to_string(max_pos) + " positions");
  }
  TokenText text;
  if (!o.ids.empty()) {
    // Token ids instead of a text: the lists concatenated, as a tokenized text would be.
    const CalibrationSet set = LoadCalibrationIds(o.ids, 0, 0, vocab);
    for (const auto& seq : set.sequences) text.ids.insert(text.ids.end(), seq.begin(), seq.end());
    text.sha256 = set.sha256;
  } else if (!o.gguf.empty() && o.tokenizer.empty()) {
    // The tokenizer the GGUF carries.
    text = TokenizeTextFile(o.text, gguf::LoadGgufTokenizer(gguf::GgufFile::Open(o.gguf)).tokenizer,
                            o.gguf + " (its tokenizer)", vocab);
  } else {
    text = TokenizeTextFile(o.text, o.tokenizer.empty() ? TokenizerFor(dir) : o.tokenizer, vocab);
  }
  const std::string input = o.ids.empty() ? o.text : o.ids;
  if (o.max_windows > 0) {
    // Keep the tokens the first max_windows windows cover.
    const auto keep = static_cast<size_t>(o.ctx + (o.max_windows - 1) * stride);
    if (text.ids.size() > keep) text.ids.resize(keep);
  }
  int64_t windows = 0;
  try {
    windows = static_cast<int64_t>(
        PerplexityWindows(static_cast<int64_t>(text.ids.size()), o.ctx, stride).size());
  } catch (const ExpectedError& e) {
    throw UsageError(input + ": " + e.what());
  }

  ProgressLine progress(stderr, !o.quiet);
  progress.Note("detverify: perplexity of " + input + " (" + std::to_string(text.ids.size()) +
                " tokens, " + std::to_string(windows) + " windows of " + std::to_string(o.ctx) +
                ", stride " + std::to_string(stride) + ")");
  const auto on_progress = [&](int64_t done, int64_t total) {
    progress.Update("perplexity", done, total);
  };
  PerplexitySummary s;
  std::string model_line;
  nlohmann::ordered_json model;
  if (artifact) {
    BackendOptions bo;
    bo.threads = o.threads;
    const auto backend = MakeBackend(o.backend, bo);
    IntQwen3 m(artifact->weights(), *backend);
    s = IntPerplexity(m, text.ids, o.ctx, stride, on_progress);
    model = {{"engine", "int8"},
             {"artifact", o.artifact},
             {"model_safetensors_sha256", artifact->sha256()},
             {"backend", o.backend}};
    model_line = "int8 " + o.artifact + " (model.safetensors " + artifact->sha256().substr(0, 16) +
                 ", " + o.backend + ")";
  } else {
    FloatEngineOptions fo;
    fo.dtype = ParseFloatDType(o.dtype);
    fo.threads = o.threads;
    FloatQwen3 m(*checkpoint, fo);
    s = FloatPerplexity(m, text.ids, o.ctx, stride, on_progress);
    if (o.gguf.empty()) {
      model = {{"engine", "float"}, {"hf", o.hf}, {"dtype", o.dtype}};
    } else {
      model = {{"engine", "float"},
               {"gguf", o.gguf},
               {"gguf_sha256", checkpoint->ContentSha256()},
               {"dtype", o.dtype}};
    }
    model_line = std::string("float ") + o.dtype + " " + (o.gguf.empty() ? o.hf : o.gguf);
  }
  progress.Finish();
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = model;
    j["input"] = {{"file", std::filesystem::path(input).filename().string()},
                  {"sha256", text.sha256},
                  {"tokenizer", o.ids.empty() ? text.tokenizer : "(token ids given)"},
                  {"tokens", text.ids.size()}};
    j["ctx"] = o.ctx;
    j["stride"] = stride;
    j["windows"] = s.windows;
    j["scored_tokens"] = s.scored;
    j["nll_mean"] = s.scored ? s.nll_sum / static_cast<double>(s.scored) : 0.0;
    j["perplexity"] = s.ppl();
    std::printf("%s\n", j.dump(1).c_str());
  } else {
    std::printf("perplexity %.4f  %s\n", s.ppl(), model_line.c_str());
    std::printf("  %lld tokens scored in %lld windows of %lld (stride %lld), mean NLL %.6f nats\n",
                static_cast<long long>(s.scored), static_cast<long long>(s.windows),
                static_cast<long long>(o.ctx), static_cast<long long>(stride),
                s.scored ? s.nll_sum / static_cast<double>(s.scored) : 0.0);
  }
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupPplCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<PplOptions>();
  CLI::App* cmd =
      app.add_subcommand("ppl", "perplexity of a text under an int artifact or a float checkpoint");
  auto* art = cmd->add_option("--artifact", o->artifact, "int artifact folder (the int engine)");
  auto* hf = cmd->add_option("--hf", o->hf, "Hugging Face checkpoint folder (the float engine)");
  auto* gg = cmd->add_option("--gguf", o->gguf,
                             "Llama-family GGUF model (the float engine, dequantized to float32)");
  art->excludes(hf)->excludes(gg);
  hf->excludes(gg);
  auto* text = cmd->add_option("--text", o->text, "plain text, tokenized whole");
  auto* ids =
      cmd->add_option("--ids", o->ids, "token ids instead: a JSON list of id lists, concatenated");
  text->excludes(ids);
  cmd->add_option("--ctx", o->ctx, "tokens per window")->capture_default_str();
  cmd->add_option("--stride", o->stride, "tokens between window starts (default: --ctx)");
  cmd->add_option("--max-windows", o->max_windows, "score only the first N windows");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "tokenizer.json (default: the GGUF's own, the model folder's, else Qwen3's)");
  cmd->add_option("--dtype", o->dtype, "float engine precision: fp32 | bf16")
      ->capture_default_str();
  cmd->add_option("--backend", o->backend, "int engine backend: cpu | reference")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads (default: all cores)");
  cmd->add_flag("--json", o->json, "print the result as JSON");
  cmd->add_flag("--quiet", o->quiet, "no progress display");
  cmd->callback([o, &ctx]() { RunPpl(*o, ctx); });
}

}  // namespace dv::cli
