// detverify generate: greedy generation with per-step hash chains, for one prompt (row 0, or
// --position) and optional co-prompts sharing its batch, on the int8 engine (default) or the
// float engine (--engine float: fp32 / bf16 through OpenBLAS).
//
// Also compiled into detverify-engine (DV_CLI_ENGINE_ONLY), the cross-ISA binary without the
// tokenizer and the float side: there prompts are token ids only and no text is decoded.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/file_io.h"
#include "build_info.h"
#include "cli/command.h"
#include "cli/model_options.h"
#include "engine/backends/backend_registry.h"
#include "engine/co_prompts.h"
#include "engine/generate.h"
#include "engine/npy_file.h"
#include "fingerprint/fingerprint.h"
#ifndef DV_CLI_ENGINE_ONLY
#include "float_engine/blas.h"
#include "float_engine/float_generate.h"
#ifdef DV_CLI_FLOAT_CUDA
#include "float_engine/cuda_fp16_linear.h"
#endif
#include "gguf/gguf_file.h"
#include "gguf/model_tokenizer.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#endif

namespace dv::cli {
namespace {

struct GenerateOptions {
  ModelOptions model;
  std::string engine = "int8";
  std::string dtype;  // float engine: fp32 (default; fp16 on cuda) | bf16 | fp16
  std::string prompt_ids;
  std::string prompt;  // text, tokenized with the model folder's (or the default) tokenizer
  bool chat = false;
  std::string tokenizer;
  int64_t max_new = 16;
  std::string backend = "reference";
  bool backend_given = false;
  // engine and backend as the enums every comparison uses, set once from the spellings above
  // (ResolveKinds) before anything else reads the options.
  EngineKind engine_kind = EngineKind::kInt8;
  BackendKind backend_kind = BackendKind::kReference;
  int threads = 0;
  int64_t batch = 1;
  std::string co_prompts;  // "random"
  uint64_t co_seed = 1234;
  std::string co_prompt_ids;  // "1,2;3,4"
  int64_t split = 0;
  int64_t position = 0;     // our row's index in the batch
  std::string dump_logits;  // .npy of our row's logits, [max_new, vocab]
  bool json = false;
  bool full_chains = false;  // --json: every step's chains in full, not 16-digit prefixes
  bool fingerprint = false;  // --json: this machine's fingerprint in the document
};

std::vector<std::vector<int32_t>> CoPrompts(const GenerateOptions& o, int64_t vocab) {
  if (!o.co_prompt_ids.empty()) {
    std::vector<std::vector<int32_t>> rows;
    size_t i = 0;
    while (i <= o.co_prompt_ids.size()) {
      size_t j = o.co_prompt_ids.find(';', i);
      if (j == std::string::npos) j = o.co_prompt_ids.size();
      rows.push_back(ParseIds(o.co_prompt_ids.substr(i, j - i), "--co-prompt-ids"));
      i = j + 1;
    }
    return rows;
  }
  if (o.batch <= 1) return {};
  if (o.co_prompts != "random")
    throw UsageError("--batch > 1 needs --co-prompts random or --co-prompt-ids");
  CoPromptSpec spec;
  spec.seed = o.co_seed;
  spec.count = o.batch - 1;
  return MakeCoPrompts(spec, vocab);
}

// Per-step chains as printed: 16-digit prefixes, or in full.
std::vector<std::string> PrintedChain(const std::vector<std::string>& chain, bool full) {
  if (full) return chain;
  std::vector<std::string> out;
  for (const auto& h : chain) out.push_back(h.substr(0, 16));
  return out;
}

// Stage 1: options that contradict each other, refused before anything is loaded.
void CheckOptions(const GenerateOptions& o) {
  if (o.prompt_ids.empty() == o.prompt.empty())
    throw UsageError("give --prompt TEXT or --prompt-ids 1,2,3");
  if (o.chat && o.prompt.empty()) throw UsageError("--chat applies to --prompt TEXT");
  if (o.max_new < 1) throw UsageError("--max-new must be at least 1");
  if (o.split < 0) throw UsageError("--split must be >= 0");
  if (o.position < 0) throw UsageError("--position must be >= 0");
  if (o.engine_kind == EngineKind::kInt8 && !o.dtype.empty()) {
    throw UsageError("--dtype applies to --engine float");
  }
  // Without --backend the float engine runs on the cpu (the int8 default is the reference).
  if (o.engine_kind == EngineKind::kFloat && o.backend_given) {
    FloatDTypeOn(o.backend_kind, o.backend, o.dtype);
  }
}

// Stage 2: the model (an int artifact, or a float checkpoint for --engine float), the tokenizer
// (for text prompts) and every row of the batch, checked against the vocabulary.
struct LoadedModel {
  std::unique_ptr<Artifact> artifact;
#ifndef DV_CLI_ENGINE_ONLY
  std::unique_ptr<FloatCheckpoint> checkpoint;
#endif
  std::string source;
  int64_t vocab = 0;
  std::string dir;  // where a tokenizer.json may lie beside the weights

  const std::string& sha256() const {
#ifndef DV_CLI_ENGINE_ONLY
    if (checkpoint) return checkpoint->ContentSha256();
#endif
    return artifact->sha256();
  }
};

LoadedModel LoadModel(const GenerateOptions& o) {
  LoadedModel m;
  if (o.engine_kind == EngineKind::kFloat) {
#ifdef DV_CLI_ENGINE_ONLY
    throw UsageError("--engine float is not part of detverify-engine");
#else
    m.checkpoint = o.model.LoadFloat(&m.source);
    m.vocab = m.checkpoint->config().vocab;
    m.dir = m.checkpoint->source();
#endif
  } else {
    m.artifact = o.model.Load(&m.source);
    m.vocab = m.artifact->weights().config.vocab;
    m.dir = m.artifact->dir();
  }
  return m;
}

struct GenerateInputs {
  LoadedModel model;
#ifndef DV_CLI_ENGINE_ONLY
  std::unique_ptr<tok::Tokenizer> tokenizer;
#endif
  std::vector<std::vector<int32_t>> rows;
  size_t ours = 0;
};

void CheckVocabulary(const std::vector<int32_t>& ids, int64_t vocab, const char* what) {
  for (int32_t id : ids) {
    if (id >= vocab)
      throw UsageError(std::string(what) + " token id " + std::to_string(id) +
                       " is outside the vocabulary (" + std::to_string(vocab) + ")");
  }
}

GenerateInputs PrepareInputs(const GenerateOptions& o) {
  GenerateInputs in;
  in.model = LoadModel(o);
  const int64_t vocab = in.model.vocab;
#ifdef DV_CLI_ENGINE_ONLY
  const std::vector<int32_t> prompt = ParseIds(o.prompt_ids, "--prompt-ids");
#else
  // A GGUF model, and an artifact prepared from one (its tokenizer.gguf), carry their tokenizer
  // and chat template; otherwise the model folder's tokenizer.json (or --tokenizer, or Qwen3's)
  // and Qwen3's template (gguf/model_tokenizer.h).
  std::optional<tok::ChatTemplate> chat_template;
  if (!o.prompt.empty()) {
    const std::string path = !o.tokenizer.empty() ? o.tokenizer
                             : !o.model.gguf.empty() ? o.model.gguf
                                                     : gguf::TokenizerPathFor(in.model.dir);
    gguf::ModelTokenizer t = gguf::LoadModelTokenizer(path);
    if (o.chat) chat_template = t.Chat();
    in.tokenizer = std::make_unique<tok::Tokenizer>(std::move(t.tokenizer));
  }
  if (!chat_template) chat_template = tok::ChatTemplate::Qwen3();
  const std::string prompt_text =
      o.chat ? chat_template->Render({{"user", o.prompt, std::nullopt}}, true, false) : o.prompt;
  const std::vector<int32_t> prompt =
      in.tokenizer ? in.tokenizer->Encode(prompt_text) : ParseIds(o.prompt_ids, "--prompt-ids");
#endif
  CheckVocabulary(prompt, vocab, "prompt");
  auto co_prompts = CoPrompts(o, vocab);
  if (o.position > static_cast<int64_t>(co_prompts.size())) {
    throw UsageError("--position " + std::to_string(o.position) + " is outside a batch of " +
                     std::to_string(co_prompts.size() + 1));
  }
  for (const auto& row : co_prompts) CheckVocabulary(row, vocab, "co-prompt");
  in.ours = static_cast<size_t>(o.position);
  in.rows = ComposeBatch(prompt, std::move(co_prompts), o.position);
  return in;
}

// Stage 3: greedy generation on the chosen engine, timed; our row's logits streamed to
// --dump-logits as they come.
struct GenerateOutcome {
  std::vector<RowResult> results;
  double seconds = 0.0;
  int64_t wrap_events = 0;
  WrapEvents wrap_sites;
  nlohmann::json engine;  // engine, backend / dtype, threads, BLAS
  std::string engine_line;
};

GenerateOutcome RunEngine(const GenerateOptions& o, const GenerateInputs& in, NpyWriter* dump) {
  GenerationOptions go;
  go.max_new = o.max_new;
  go.split = o.split;
  GenerateOutcome g;
  const size_t ours = in.ours;
  const std::string layout =
      "batch " + std::to_string(in.rows.size()) + ", split " + std::to_string(o.split);
#ifndef DV_CLI_ENGINE_ONLY
  if (in.model.checkpoint) {
    FloatEngineOptions fo;
    const bool on_cuda = o.backend_kind == BackendKind::kCuda;
    fo.dtype = ParseFloatDType(
        FloatDTypeOn(on_cuda ? BackendKind::kCuda : BackendKind::kCpu, o.backend, o.dtype));
    fo.threads = o.threads;
#ifdef DV_CLI_FLOAT_CUDA
    if (on_cuda) fo.linear = MakeCudaFp16Linear();
#endif
    FloatQwen3 model(*in.model.checkpoint, fo);
    FloatLogitsCallback on_logits;
    if (dump) {
      on_logits = [&](size_t row, int64_t, std::span<const float> logits) {
        if (row == ours) dump->AppendRow(logits.data(), static_cast<int64_t>(logits.size()));
      };
    }
    const auto t0 = std::chrono::steady_clock::now();
    g.results = GenerateGreedyFloat(model, in.rows, go, nullptr, on_logits);
    g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    g.engine = {{"engine", "float"},
                {"backend", on_cuda ? "cuda" : "cpu"},
                {"dtype", FloatDTypeName(fo.dtype)},
                {"threads", BlasThreads()},
                {"blas", fo.linear ? fo.linear->Description() : BlasDescription(fo.dtype)}};
    g.engine_line = std::string("float ") + FloatDTypeName(fo.dtype) + " (" +
                    (fo.linear ? fo.linear->Description() : "OpenBLAS") + ", " +
                    std::to_string(BlasThreads()) + " threads), " + layout;
    return g;
  }
#endif
  BackendOptions bo;
  bo.threads = o.threads;
  auto backend = MakeBackend(o.backend_kind, bo);
  IntQwen3 model(in.model.artifact->weights(), *backend);
  LogitsCallback on_logits;
  if (dump) {
    on_logits = [&](size_t row, int64_t, std::span<const int32_t> logits) {
      if (row == ours) dump->AppendRow(logits);
    };
  }
  const auto t0 = std::chrono::steady_clock::now();
  g.results = GenerateGreedy(model, in.rows, go, nullptr, on_logits);
  g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g.wrap_events = model.wrap_events();
  g.wrap_sites = model.wrap_events_by_site();
  g.engine = {{"engine", "int8"}, {"backend", o.backend}};
  g.engine_line = o.backend + ", " + layout;
  return g;
}

GenerateOutcome Generate(const GenerateOptions& o, const GenerateInputs& in) {
  std::optional<NpyWriter> dump;
  if (!o.dump_logits.empty()) {
    dump.emplace(o.dump_logits, in.model.artifact ? NpyElement::kInt32 : NpyElement::kFloat32,
                 o.max_new, in.model.vocab);
  }
  GenerateOutcome g = RunEngine(o, in, dump ? &*dump : nullptr);
  if (dump) dump->Finish();
  return g;
}

double TokensPerSecond(const GenerateOptions& o, const GenerateOutcome& g) {
  return static_cast<double>(o.max_new) / (g.seconds > 0 ? g.seconds : 1e-9);
}

// Stage 4a: the --json document, every row with its chains.
void RenderJson(const GenerateOptions& o, const GenerateInputs& in, const GenerateOutcome& g) {
  const LoadedModel& m = in.model;
  nlohmann::json doc;
  doc["tool_version"] = build::kToolVersion;
  doc["spec"] = m.artifact ? SpecVersionOf(m.artifact->weights().config) : build::kSpecVersion;
  doc[m.artifact ? "artifact" : "checkpoint"] = {{"source", m.source}, {"sha256", m.sha256()}};
  doc.update(g.engine);
  doc["max_new"] = o.max_new;
  doc["split"] = o.split;
  doc["position"] = o.position;
  if (m.artifact) {
    doc["wrap_events"] = g.wrap_events;
    doc["wrap_events_by_site"] = {{"q_quant", g.wrap_sites.q_quant},
                                  {"down_input", g.wrap_sites.down_input},
                                  {"other", g.wrap_sites.other}};
  }
  doc["wall_ms"] = static_cast<int64_t>(g.seconds * 1000.0);
  doc["tokens_per_s"] = TokensPerSecond(o, g);
  if (!o.dump_logits.empty()) doc["dump_logits"] = o.dump_logits;
  if (o.fingerprint) doc["fingerprint"] = fingerprint::CollectFingerprint();
  for (size_t r = 0; r < g.results.size(); ++r) {
    const RowResult& res = g.results[r];
#ifdef DV_CLI_ENGINE_ONLY
    const nlohmann::json text;
#else
    const nlohmann::json text =
        in.tokenizer ? nlohmann::json(in.tokenizer->Decode(res.tokens)) : nlohmann::json();
#endif
    doc["rows"].push_back(
        {{"row", r},
         {"ours", r == in.ours},
         {"prompt_ids", in.rows[r]},
         {"text", text},
         {"tokens", res.tokens},
         {"logits_chain", PrintedChain(res.logits_chain, o.full_chains)},
         {"token_chain", PrintedChain(res.token_chain, o.full_chains)},
         {"final",
          {{"logits_chain", res.logits_chain.back()}, {"token_chain", res.token_chain.back()}}}});
  }
  std::cout << doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// Stage 4b: our row as text.
void RenderText(const GenerateOptions& o, const GenerateInputs& in, const GenerateOutcome& g) {
  const LoadedModel& m = in.model;
  const RowResult& res = g.results[in.ours];
  std::printf("model         %s (sha256 %.16s)\n", m.source.c_str(), m.sha256().c_str());
  std::printf("%s%s\n", m.artifact ? "backend       " : "engine        ", g.engine_line.c_str());
  std::printf("tokens       ");
  for (int32_t t : res.tokens) std::printf(" %d", t);
#ifndef DV_CLI_ENGINE_ONLY
  if (in.tokenizer) std::printf("\ntext          %s", in.tokenizer->Decode(res.tokens).c_str());
#endif
  std::printf("\nlogits chain  @%lld %s\n", static_cast<long long>(o.max_new),
              res.logits_chain.back().c_str());
  std::printf("token chain   @%lld %s\n", static_cast<long long>(o.max_new),
              res.token_chain.back().c_str());
  std::printf("speed         %.1f tokens/s (%lld steps in %.2f s)\n", TokensPerSecond(o, g),
              static_cast<long long>(o.max_new), g.seconds);
  if (!o.dump_logits.empty()) {
    std::printf("logits        %s ([%lld, %lld] %s)\n", o.dump_logits.c_str(),
                static_cast<long long>(o.max_new), static_cast<long long>(m.vocab),
                m.artifact ? "int32" : "float32");
  }
  if (g.wrap_events > 0) {
    const WrapEvents& sites = g.wrap_sites;
    std::printf(
        "note          %lld int64 wrap events: %lld in the Q quantization (W1), %lld in the\n"
        "              down-projection input (W2), %lld elsewhere (detllm-v1 semantics,\n"
        "              reproduced bit for bit; docs/SPEC.md §8)\n",
        static_cast<long long>(g.wrap_events), static_cast<long long>(sites.q_quant),
        static_cast<long long>(sites.down_input), static_cast<long long>(sites.other));
  }
}

// The spellings of --engine and --backend as enums, once, before anything is checked or loaded.
void ResolveKinds(GenerateOptions& o) {
  const std::optional<EngineKind> engine = ParseKind<EngineKind>(o.engine);
  if (!engine) throw UsageError("--engine must be int8 or float, not '" + o.engine + "'");
  o.engine_kind = *engine;
  o.backend_kind = ParseBackendName(o.backend);
}

// options -> inputs -> generate -> render.
void RunGenerate(const GenerateOptions& o, CommandContext& ctx) {
  CheckOptions(o);
  const GenerateInputs in = PrepareInputs(o);
  const GenerateOutcome g = Generate(o, in);
  if (o.json) {
    RenderJson(o, in, g);
  } else {
    RenderText(o, in, g);
  }
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupGenerateCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "greedy generation with per-step hash chains");
  opt->model.AddTo(cmd);
#ifndef DV_CLI_ENGINE_ONLY
  cmd->add_option("--engine", opt->engine,
                  "int8 (the integer engine) | float (fp32/bf16 through OpenBLAS; --hf DIR, "
                  "--gguf FILE or --preset)")
      ->capture_default_str();
  cmd->add_option("--dtype", opt->dtype,
                  "float engine precision: fp32 (default on cpu) | bf16 | fp16 (default on cuda)");
  cmd->add_option(
      "--prompt", opt->prompt,
      "prompt text (tokenized with the GGUF's tokenizer, the model folder's tokenizer.json, "
      "else Qwen3's)");
  cmd->add_flag("--chat", opt->chat,
                "wrap --prompt as a user turn of the chat template (the GGUF's, else Qwen3's)");
  cmd->add_option("--tokenizer", opt->tokenizer, "tokenizer.json for --prompt");
#endif
  cmd->add_option("--prompt-ids", opt->prompt_ids, "prompt token ids, comma separated");
  cmd->add_option("--max-new", opt->max_new, "generated steps")->capture_default_str();
  CLI::Option* backend =
      cmd->add_option("--backend", opt->backend, "reference | cpu | cuda")->capture_default_str();
  cmd->add_option("--threads", opt->threads,
                  "cpu backend threads, the cuda backend's host threads, or the float engine's "
                  "OpenBLAS threads (0: all cores)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--batch", opt->batch, "rows in the batch (ours is row --position)")
      ->capture_default_str();
  cmd->add_option("--co-prompts", opt->co_prompts, "co-prompt generator: random");
  cmd->add_option("--co-seed", opt->co_seed, "seed of the random co-prompts")
      ->capture_default_str();
  cmd->add_option("--co-prompt-ids", opt->co_prompt_ids, "explicit co-prompts: \"1,2,3;4,5,6,7\"");
  cmd->add_option("--split", opt->split,
                  "prefill P prompt tokens at once, then one by one (0: all at once)");
  cmd->add_option("--position", opt->position, "our row's index among the co-prompts")
      ->capture_default_str();
  cmd->add_option("--dump-logits", opt->dump_logits,
                  "write our row's logits of every step to FILE.npy ([steps, vocab]; int32 for "
                  "int8, float32 for float)");
  cmd->add_flag("--json", opt->json, "print a JSON document with per-step chains");
  cmd->add_flag("--full-chains", opt->full_chains,
                "--json: every step's chains in full (64 hex digits)");
  cmd->add_flag("--fingerprint", opt->fingerprint, "--json: include this machine's fingerprint");
  cmd->callback([opt, backend, &ctx]() {
    opt->backend_given = backend->count() > 0;
    ResolveKinds(*opt);
    RunGenerate(*opt, ctx);
  });
}

}  // namespace dv::cli
