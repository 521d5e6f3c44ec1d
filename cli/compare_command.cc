// detverify compare: how faithfully an int artifact follows the float checkpoint it was prepared
// from -- teacher-forced over a text or token-id lists, every position: top-1 agreement, top-5
// containment both ways, mean KL(float || int), relative L2 of the real logits, and agreement
// where the float model's top-1/top-2 gap is large (fidelity/logit_stats.h defines each).
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
#include "prepare/calibration_set.h"

namespace dv::cli {
namespace {

struct CompareOptions {
  std::string artifact, hf, gguf, text, ids, tokenizer, dtype = "fp32", backend = "cpu";
  int64_t len = 0, samples = 0;
  int threads = 0;
  bool json = false, quiet = false;
};

std::string Percent(int64_t a, int64_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%6lld / %-6lld %7.2f%%", static_cast<long long>(a),
                static_cast<long long>(b),
                b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0);
  return buf;
}

// The sequences: the text cut into consecutive chunks of `len` tokens (default 256), or the id
// lists (each cut to `len` when given); at most `samples` of them when given.
std::vector<std::vector<int32_t>> Sequences(const CompareOptions& o, int64_t vocab,
                                            nlohmann::ordered_json& source) {
  if (!o.ids.empty()) {
    CalibrationSet set = LoadCalibrationIds(o.ids, o.samples, o.len, vocab);
    source = {{"ids", std::filesystem::path(o.ids).filename().string()}, {"sha256", set.sha256}};
    return std::move(set.sequences);
  }
  const std::string tok_path = !o.tokenizer.empty() ? o.tokenizer
                               : o.gguf.empty()     ? TokenizerFor(o.artifact, TokenizerFor(o.hf))
                                                    : TokenizerFor(o.artifact, o.gguf);
  const TokenText t = TokenizeTextFile(o.text, tok_path, vocab);
  const int64_t len = o.len > 0 ? o.len : 256;
  const int64_t n = static_cast<int64_t>(t.ids.size()) / len;
  if (n == 0) {
    throw UsageError(o.text + ": " + std::to_string(t.ids.size()) + " tokens, fewer than one " +
                     "sequence of --len " + std::to_string(len));
  }
  const int64_t take = o.samples > 0 ? std::min(o.samples, n) : n;
  std::vector<std::vector<int32_t>> seqs;
  for (int64_t s = 0; s < take; ++s) {
    seqs.emplace_back(t.ids.begin() + s * len, t.ids.begin() + (s + 1) * len);
  }
  source = {{"text", std::filesystem::path(o.text).filename().string()},
            {"sha256", t.sha256},
            {"tokenizer", t.tokenizer}};
  return seqs;
}

const std::string& FloatModelName(const CompareOptions& o) {
  return o.gguf.empty() ? o.hf : o.gguf;
}

void CheckSameModel(const ModelConfig& a, const FloatModelConfig& f, const CompareOptions& o) {
  if (a.n_layers != f.n_layers || a.hidden != f.hidden || a.vocab != f.vocab ||
      a.n_q_heads != f.n_q_heads || a.n_kv_heads != f.n_kv_heads || a.head_dim != f.head_dim) {
    throw UsageError(o.artifact + " (" + std::to_string(a.n_layers) + " layers, hidden " +
                     std::to_string(a.hidden) + ", vocab " + std::to_string(a.vocab) +
                     ") is not a preparation of " + FloatModelName(o) + " (" +
                     std::to_string(f.n_layers) + " layers, hidden " + std::to_string(f.hidden) +
                     ", vocab " + std::to_string(f.vocab) + ")");
  }
}

void RunCompare(const CompareOptions& o, CommandContext& ctx) {
  if (o.text.empty() == o.ids.empty()) throw UsageError("give --text FILE or --ids FILE");
  if (o.len < 0 || o.samples < 0) throw UsageError("--len and --samples must be >= 1");
  if (o.hf.empty() == o.gguf.empty()) throw UsageError("give --hf DIR or --gguf FILE (one)");
  const auto artifact = Artifact::Load(o.artifact);
  const std::unique_ptr<FloatCheckpoint> checkpoint =
      o.gguf.empty() ? OpenHfCheckpoint(o.hf) : gguf::OpenGgufCheckpoint(o.gguf, [&] {
        if (!o.quiet)
          std::fprintf(stderr, "detverify: dequantizing %s to float32\n", o.gguf.c_str());
      });
  CheckSameModel(artifact->weights().config, checkpoint->config(), o);
  nlohmann::ordered_json source;
  const auto seqs = Sequences(o, artifact->weights().config.vocab, source);
  int64_t positions = 0;
  for (const auto& s : seqs) positions += static_cast<int64_t>(s.size());

  ProgressLine progress(stderr, !o.quiet);
  FloatEngineOptions fo;
  fo.dtype = ParseFloatDType(o.dtype);
  fo.threads = o.threads;
  FloatQwen3 float_model(*checkpoint, fo);
  BackendOptions bo;
  bo.threads = o.threads;
  const auto backend = MakeBackend(o.backend, bo);
  IntQwen3 int_model(artifact->weights(), *backend);
  const CompareSummary s = CompareTeacherForced(
      int_model, FloatEngineLogits(float_model), seqs,
      [&](int64_t done, int64_t total) { progress.Update("compare", done, total); });
  progress.Finish();

  if (o.json) {
    nlohmann::ordered_json j;
    j["artifact"] = {{"dir", o.artifact}, {"model_safetensors_sha256", artifact->sha256()}};
    j["float"] = {{o.gguf.empty() ? "hf" : "gguf", FloatModelName(o)}, {"dtype", o.dtype}};
    j["input"] = source;
    j["sequences"] = seqs.size();
    j["positions"] = s.positions;
    j["top1_agree"] = s.top1_agree;
    j["top1_rate"] = s.top1_rate();
    j["int_top1_in_float_top5"] = s.int_top1_in_float_top5;
    j["float_top1_in_int_top5"] = s.float_top1_in_int_top5;
    j["kl_float_int_mean"] = s.kl_mean;
    j["kl_float_int_max"] = s.kl_max;
    j["logits_rel_l2_mean"] = s.rel_l2_mean;
    j["logits_rel_l2_max"] = s.rel_l2_max;
    nlohmann::ordered_json gaps = nlohmann::ordered_json::array();
    for (const GapBucket& b : s.by_gap) {
      gaps.push_back(
          {{"min_gap_sd", b.min_gap_sd}, {"positions", b.positions}, {"top1_agree", b.top1_agree}});
    }
    j["top1_agree_by_float_gap"] = gaps;
    j["int_top1"] = s.int_top1;
    j["float_top1"] = s.float_top1;
    std::printf("%s\n", j.dump(1).c_str());
  } else {
    std::printf("compare %s (model.safetensors %.16s) with %s (%s), teacher-forced\n",
                o.artifact.c_str(), artifact->sha256().c_str(), FloatModelName(o).c_str(),
                o.dtype.c_str());
    std::printf("  %zu sequences, %lld positions\n", seqs.size(),
                static_cast<long long>(positions));
    std::printf("  %-34s %s\n", "top-1 agreement", Percent(s.top1_agree, s.positions).c_str());
    std::printf("  %-34s %s\n", "int top-1 in float top-5",
                Percent(s.int_top1_in_float_top5, s.positions).c_str());
    std::printf("  %-34s %s\n", "float top-1 in int top-5",
                Percent(s.float_top1_in_int_top5, s.positions).c_str());
    std::printf("  %-34s %.6f nats (max %.6f)\n", "mean KL(float || int)", s.kl_mean, s.kl_max);
    std::printf("  %-34s %.6f (max %.6f)\n", "relative L2 of the logits", s.rel_l2_mean,
                s.rel_l2_max);
    std::printf("  top-1 agreement where the float top-1/top-2 gap is at least\n");
    for (const GapBucket& b : s.by_gap) {
      char label[48];
      std::snprintf(label, sizeof label, "  %.2f standard deviations", b.min_gap_sd);
      std::printf("  %-34s %s\n", label, Percent(b.top1_agree, b.positions).c_str());
    }
  }
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupCompareCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "teacher-forced fidelity of an int artifact to its float checkpoint");
  cmd->add_option("--artifact", o->artifact, "int artifact folder")->required();
  auto* hf = cmd->add_option("--hf", o->hf, "the Hugging Face checkpoint it was prepared from");
  cmd->add_option("--gguf", o->gguf, "or the GGUF model it was prepared from")->excludes(hf);
  auto* text = cmd->add_option("--text", o->text,
                               "plain text, tokenized whole and cut into --len token sequences");
  auto* ids = cmd->add_option("--ids", o->ids, "token ids: a JSON list of id lists");
  text->excludes(ids);
  cmd->add_option("--len", o->len, "tokens per sequence (text: 256; ids: as given)");
  cmd->add_option("--samples", o->samples, "at most this many sequences (default: all)");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "tokenizer.json for --text (default: the artifact's, else the checkpoint's or "
                  "GGUF's, else Qwen3's)");
  cmd->add_option("--dtype", o->dtype, "float engine precision: fp32 | bf16")
      ->capture_default_str();
  cmd->add_option("--backend", o->backend, "int engine backend: cpu | reference")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads of both engines (default: all cores)");
  cmd->add_flag("--json", o->json, "print the result as JSON (with every position's top-1)");
  cmd->add_flag("--quiet", o->quiet, "no progress display");
  cmd->callback([o, &ctx]() { RunCompare(*o, ctx); });
}

}  // namespace dv::cli
