// detverify prepare: a Hugging Face checkpoint -> a detllm-v1 int artifact (prepare/), by
// DetLLM's recipe with DetLLM's defaults, reproducibly (the same bytes on every machine); a
// Llama-family checkpoint or GGUF -> a detllm-v1-llama one (docs/SPEC.md §9).
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "checkpoint/hf_checkpoint.h"
#include "cli/command.h"
#include "cli/progress_line.h"
#include "prepare/calib_stats.h"
#include "prepare/calibration_set.h"
#include "prepare/prepare_artifact.h"
#ifndef DV_CLI_ENGINE_ONLY
#include "gguf/gguf_checkpoint.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/model_tokenizer.h"
#include "prepare/calib_text.h"
#include "tokenizer/tokenizer.h"
#endif

namespace dv::cli {
namespace {

struct PrepareCliOptions {
  std::string hf, gguf, out;
  std::string calib_text, calib_ids, calib_stats, save_stats, tokenizer, model_id;
  int64_t calib_samples = 0, calib_len = 0;  // 0: the source's default
  double kv_margin = 1.05, qk_alpha = 0.3;
  bool no_smooth_acts = false, no_smooth_o = false, force = false, json = false, quiet = false;
  int threads = 0;
};

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

void RunPrepare(const PrepareCliOptions& o, CommandContext& ctx) {
  if (o.kv_margin <= 0 || !(o.kv_margin < 1e6)) throw UsageError("--kv-margin must be > 0");
  if (!(o.qk_alpha >= 0 && o.qk_alpha <= 1)) throw UsageError("--qk-alpha must lie in [0, 1]");
  if (o.calib_samples < 0 || o.calib_len < 0) {
    throw UsageError("--calib-samples and --calib-len must be >= 1");
  }
  if (o.hf.empty() == o.gguf.empty()) throw UsageError("give --hf DIR or --gguf FILE (one)");
  ProgressLine progress(stderr, !o.quiet);
  const std::string& model = o.gguf.empty() ? o.hf : o.gguf;
#ifdef DV_CLI_ENGINE_ONLY
  const std::unique_ptr<FloatCheckpoint> checkpoint = OpenHfCheckpoint(o.hf);
#else
  const std::unique_ptr<FloatCheckpoint> checkpoint =
      o.gguf.empty() ? OpenHfCheckpoint(o.hf) : gguf::OpenGgufCheckpoint(o.gguf, [&] {
        progress.Note("detverify: dequantizing " + o.gguf + " to float32");
      });
#endif
  const FloatModelConfig& c = checkpoint->config();
  const std::string why = CheckPreparable(c);
  if (!why.empty()) throw ArtifactError(model + ": " + why);

  PrepareOptions p;
  p.out_dir = o.out;
  p.force = o.force;
  p.threads = o.threads > 0 ? o.threads
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  p.save_stats_path = o.save_stats;
  p.recipe.kv_margin = o.kv_margin;
  p.recipe.qk_alpha = o.qk_alpha;
  p.recipe.smooth_acts = !o.no_smooth_acts;
  p.recipe.smooth_o = !o.no_smooth_o;
  p.recipe.model_id = o.model_id;
  p.progress = [&progress](const char* phase, int64_t done, int64_t total) {
    progress.Update(phase, done, total);
  };
  // The checkpoint's own tokenizer goes into the artifact: a folder's tokenizer.json, or the
  // tokenizer and chat template of a GGUF (its metadata, as tokenizer.gguf).
  const std::string own_tokenizer = o.gguf.empty() ? o.hf + "/tokenizer.json" : o.gguf;
#ifndef DV_CLI_ENGINE_ONLY
  if (!o.gguf.empty()) {
    p.write_extra_files = [&o](const std::string& dir) {
      gguf::WriteTokenizerGguf(gguf::GgufFile::Open(o.gguf),
                               dir + "/" + gguf::kArtifactTokenizerFile);
    };
  }
#endif
  if (o.gguf.empty() && Exists(own_tokenizer)) p.tokenizer_json = own_tokenizer;

  if (!o.calib_stats.empty()) {
    CalibStats stats = LoadCalibStats(o.calib_stats, c);
    // What config.json records: the options, else the file's metadata, else DetLLM's defaults.
    p.recipe.calib_samples = o.calib_samples > 0       ? o.calib_samples
                             : stats.calib_samples > 0 ? stats.calib_samples
                                                       : 48;
    p.recipe.calib_len = o.calib_len > 0       ? o.calib_len
                         : stats.calib_len > 0 ? stats.calib_len
                                               : 1024;
    p.stats_source = o.calib_stats;
    p.stats = std::move(stats);
  } else {
    CalibrationSet set;
    if (!o.calib_ids.empty()) {
      set = LoadCalibrationIds(o.calib_ids, o.calib_samples, o.calib_len, c.vocab);
    } else if (!o.calib_text.empty()) {
#ifdef DV_CLI_ENGINE_ONLY
      throw UsageError("--calib (text) is not part of detverify-engine; pass --calib-ids");
#else
      std::string tok_path = o.tokenizer;
      if (tok_path.empty())
        tok_path = Exists(own_tokenizer) ? own_tokenizer : tok::DefaultTokenizerPath();
      const tok::Tokenizer tokenizer = gguf::LoadModelTokenizer(tok_path).tokenizer;
      progress.Note("detverify: tokenizing " + o.calib_text + " with " + tok_path);
      set = TokenizeCalibrationText(o.calib_text, tokenizer,
                                    o.calib_samples > 0 ? o.calib_samples : 48,
                                    o.calib_len > 0 ? o.calib_len : 1024, c.vocab);
#endif
    } else {
      set =
          BuiltinCalibration(c.vocab, o.calib_samples > 0 ? o.calib_samples : kBuiltinCalibSamples,
                             o.calib_len > 0 ? o.calib_len : kBuiltinCalibLen);
      std::fprintf(stderr,
                   "detverify: warning: no --calib or --calib-ids given: calibrating on the "
                   "built-in random token ids (%lld x %lld); a trained model should be calibrated "
                   "on text (--calib FILE)\n",
                   static_cast<long long>(set.samples()), static_cast<long long>(set.max_len()));
    }
    p.recipe.calib_samples = set.samples();
    p.recipe.calib_len = set.max_len();
    p.calibration = std::move(set);
  }
  progress.Note("detverify: preparing " + model + " (" + ModelFamilyName(c.family) + ", " +
                std::to_string(c.n_layers) + " layers, hidden " + std::to_string(c.hidden) +
                ", vocab " + std::to_string(c.vocab) + ") into " + o.out + " with " +
                std::to_string(p.threads) + " threads");
  const PrepareResult r = PrepareArtifact(*checkpoint, p);
  progress.Finish();
  if (r.rope_sensitive_entries > 0) {
    std::fprintf(stderr,
                 "detverify: warning: %lld RoPE table entries lie so close to a rounding boundary "
                 "that a torch-based prepare might round them differently\n",
                 static_cast<long long>(r.rope_sensitive_entries));
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["artifact"] = r.out_dir;
    j["model_safetensors_sha256"] = r.sha256;
    j["config_json_sha256"] = r.config_sha256;
    j["rope_sensitive_entries"] = r.rope_sensitive_entries;
    j["calibration_seconds"] = r.calibration_seconds;
    j["quantization_seconds"] = r.quantization_seconds;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s  %s/model.safetensors\n%s  %s/config.json\n", r.sha256.c_str(),
                r.out_dir.c_str(), r.config_sha256.c_str(), r.out_dir.c_str());
    std::fprintf(stderr, "detverify: calibration %s, quantization %s\n",
                 FormatDuration(r.calibration_seconds).c_str(),
                 FormatDuration(r.quantization_seconds).c_str());
  }
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupPrepareCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<PrepareCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "prepare",
      "turn a Hugging Face Qwen3 checkpoint into a detllm-v1 int artifact (DetLLM's recipe; the "
      "same bytes on every machine), or a Llama-family model into a detllm-v1-llama one");
  auto* hf =
      cmd->add_option("--hf", o->hf, "Hugging Face checkpoint folder (config.json + safetensors)");
#ifndef DV_CLI_ENGINE_ONLY
  cmd->add_option("--gguf", o->gguf,
                  "or a Llama-family GGUF model file (dequantized; its tokenizer and chat template "
                  "go into the artifact)")
      ->excludes(hf);
#else
  hf->required();  // the engine-only binary has no GGUF reader
#endif
  cmd->add_option("--out", o->out, "artifact folder to write (must not exist, or --force)")
      ->required();
  auto* ids = cmd->add_option("--calib-ids", o->calib_ids,
                              "calibration token ids: a JSON list of id lists (or {\"ids\": ...})");
  auto* stats = cmd->add_option("--calib-stats", o->calib_stats,
                                "calibration statistics (safetensors, DetLLM's seven float32 "
                                "maxima) instead of a calibration forward");
#ifndef DV_CLI_ENGINE_ONLY
  auto* text = cmd->add_option(
      "--calib", o->calib_text,
      "calibration text (plain text, tokenized whole, cut into --calib-samples chunks of "
      "--calib-len tokens; DetLLM used WikiText2 train, 48 x 1024)");
  text->excludes(ids)->excludes(stats);
  cmd->add_option("--tokenizer", o->tokenizer,
                  "tokenizer.json for --calib (default: the checkpoint's or GGUF's, else Qwen3's)");
#endif
  ids->excludes(stats);
  cmd->add_option("--calib-samples", o->calib_samples,
                  "calibration sequences (text: 48; ids: all; built-in: 4)");
  cmd->add_option("--calib-len", o->calib_len,
                  "tokens per sequence (text: 1024; ids: as given; built-in: 128)");
  cmd->add_option("--save-calib-stats", o->save_stats, "also write the statistics to FILE");
  cmd->add_option("--kv-margin", o->kv_margin, "static K/V cache scale margin")
      ->capture_default_str();
  cmd->add_option("--qk-alpha", o->qk_alpha, "QK smoothing exponent")->capture_default_str();
  cmd->add_flag("--no-smooth-acts", o->no_smooth_acts,
                "no attention/MLP/down input smoothing (DetLLM's ablation)");
  cmd->add_flag("--no-smooth-o", o->no_smooth_o, "no o-projection input smoothing");
  cmd->add_option("--model-id", o->model_id, "config.json's model_id (default: the folder name)");
  cmd->add_option("--threads", o->threads, "threads (default: all cores; the bytes do not change)");
  cmd->add_flag("--force", o->force, "replace an existing --out folder");
  cmd->add_flag("--json", o->json, "print the result as JSON");
  cmd->add_flag("--quiet", o->quiet, "no progress display");
  cmd->callback([o, &ctx]() { RunPrepare(*o, ctx); });
}

}  // namespace dv::cli
