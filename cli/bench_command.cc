// detverify bench: throughput of the integer engine on one backend (or of the float engine,
// --engine float) -- prefill and decode tokens/s, peak RSS -- next to this machine's memory-read
// bandwidth and the batch-1 decode roofline it implies (every weight byte is read once per
// decoded token: int8 for the integer engine, fp32 for the float one). Timing and the
// statistics use floating point; the integer engine does not.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "build_info.h"
#include "cli/command.h"
#include "cli/model_options.h"
#include "engine/backends/backend_registry.h"
#include "engine/backends/cpu_backend.h"
#include "engine/backends/cpu_weight_arena.h"
#include "engine/model.h"
#include "fingerprint/fingerprint.h"
#include "float_engine/blas.h"
#include "float_engine/float_model.h"

namespace dv::cli {
namespace {

struct BenchOptions {
  ModelOptions model;
  std::string engine = "int8";
  std::string dtype;  // float engine: fp32 (default) | bf16
  std::string backend = "cpu";
  int threads = 0;
  std::string isa;                       // cpu backend: force an ISA level
  std::string prefill = "64,512";        // prompt lengths
  std::string decode_batches = "1,4,8";  // rows decoded together
  int64_t context = 64;                  // tokens each decode row holds before the timed steps
  int64_t decode_steps = 64;             // timed decode calls per batch
  int repeats = 3;                       // runs per measurement; the median is reported
  int64_t bandwidth_mib = 1024;          // size of the bandwidth probe's buffer
  bool json = false;
};

using Clock = std::chrono::steady_clock;

constexpr int kProbePasses = 10;       // timed passes per bandwidth probe (after one warm-up pass)
constexpr int64_t kMinProbeMib = 256;  // probes between runs read half of it: still 4x this L3

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<int64_t> ParseList(const std::string& text, const std::string& what) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1)
      throw UsageError(what + ": '" + item + "' is not a positive integer");
    out.push_back(v);
  }
  return out;
}

// Deterministic token ids in [0, vocab) (SplitMix64): the engine's speed does not depend on them.
std::vector<int32_t> BenchTokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint64_t x = seed;
  for (auto& id : ids) {
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    id = static_cast<int32_t>(z % static_cast<uint64_t>(vocab));
  }
  return ids;
}

// int8 weight bytes one decoded token streams: every linear layer and the LM head.
int64_t WeightBytesPerToken(const ModelConfig& c) {
  const int64_t qd = c.n_q_heads * c.head_dim, kvd = c.n_kv_heads * c.head_dim;
  const int64_t per_layer =
      c.hidden * (qd + 2 * kvd) + qd * c.hidden + 3 * c.hidden * c.intermediate;
  return c.n_layers * per_layer + c.hidden * c.vocab;
}

// The process's peak resident set: VmHWM of /proc/self/status (getrusage's ru_maxrss where that
// file is missing).
int64_t PeakRssBytes() {
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long long kib = -1;
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      if (std::sscanf(line, "VmHWM: %lld kB", &kib) == 1) break;
    }
    std::fclose(f);
    if (kib >= 0) return kib * 1024;
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

// Resets the peak to the current resident set (Linux >= 4.0), so that the bandwidth probe's
// buffer does not count as the engine's memory. Returns false where that is not possible.
bool ResetPeakRss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// Both engines have the same forward-call shape: a cache per row, rows of ids, logits out. The
// integer engine's K/V storage comes from its backend.
template <typename Model>
struct EngineTypes;
template <>
struct EngineTypes<IntQwen3> {
  using Cache = KvCache;
  using Row = ForwardRow;
  using Logit = int32_t;
  static std::unique_ptr<Cache> MakeCache(IntQwen3& model, int64_t capacity) {
    return std::make_unique<KvCache>(model.config(), capacity, model.backend());
  }
};
template <>
struct EngineTypes<FloatQwen3> {
  using Cache = FloatKvCache;
  using Row = FloatForwardRow;
  using Logit = float;
  static std::unique_ptr<Cache> MakeCache(FloatQwen3& model, int64_t capacity) {
    return std::make_unique<FloatKvCache>(model.config(), capacity);
  }
};

template <typename Model>
double PrefillSeconds(Model& model, int64_t tokens, uint64_t seed) {
  using T = EngineTypes<Model>;
  const auto& c = model.config();
  const std::unique_ptr<typename T::Cache> cache = T::MakeCache(model, tokens);
  const std::vector<int32_t> ids = BenchTokens(tokens, c.vocab, seed);
  std::vector<typename T::Logit> logits(static_cast<size_t>(c.vocab));
  typename T::Row row{cache.get(), ids.data(), tokens, logits.data(), nullptr};
  const auto t0 = Clock::now();
  model.Forward({&row, 1});
  return Seconds(t0);
}

// Decodes `steps` tokens in each of `batch` rows that already hold `context` tokens; returns the
// seconds of the decode calls only (greedy pick included).
template <typename Model>
double DecodeSeconds(Model& model, int64_t batch, int64_t context, int64_t steps, uint64_t seed) {
  using T = EngineTypes<Model>;
  const auto& c = model.config();
  std::vector<std::unique_ptr<typename T::Cache>> caches;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<typename T::Logit>> logits;
  std::vector<int32_t> next(static_cast<size_t>(batch));
  std::vector<typename T::Row> rows;
  for (int64_t r = 0; r < batch; ++r) {
    caches.push_back(T::MakeCache(model, context + steps));
    prompts.push_back(BenchTokens(context, c.vocab, seed + static_cast<uint64_t>(r)));
    logits.emplace_back(static_cast<size_t>(c.vocab));
    rows.push_back(
        {caches.back().get(), prompts.back().data(), context, logits.back().data(), nullptr});
  }
  model.Forward(rows);
  for (int64_t r = 0; r < batch; ++r) {
    next[static_cast<size_t>(r)] = model.GreedyPick(logits[static_cast<size_t>(r)].data());
    rows[static_cast<size_t>(r)].ids = &next[static_cast<size_t>(r)];
    rows[static_cast<size_t>(r)].n_tokens = 1;
  }
  const auto t0 = Clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    model.Forward(rows);
    for (int64_t r = 0; r < batch; ++r) {
      next[static_cast<size_t>(r)] = model.GreedyPick(logits[static_cast<size_t>(r)].data());
    }
  }
  return Seconds(t0);
}

// The model under test, whichever engine: its measurements as closures, and what the report says
// about it.
struct BenchModel {
  std::function<double(int64_t tokens, uint64_t seed)> prefill;
  std::function<double(int64_t batch, int64_t context, int64_t steps, uint64_t seed)> decode;
  int64_t max_pos = 0;
  int64_t weight_bytes_per_token = 0;
  std::string what;  // first report line, after "detverify bench: "
};

double GBps(const ReadBandwidthSample& s) {
  return s.best_ns > 0 ? static_cast<double>(s.bytes) / static_cast<double>(s.best_ns) : 0.0;
}

// The int8 engine on the chosen backend.
BenchModel LoadIntModel(const BenchOptions& o, nlohmann::json& doc) {
  if (!o.dtype.empty()) throw UsageError("--dtype applies to --engine float");
  std::string source;
  std::shared_ptr<Artifact> artifact = o.model.Load(&source);
  std::shared_ptr<Backend> backend;
  const CpuBackend* cpu = nullptr;
  if (o.backend == "cpu") {
    CpuBackendOptions co;
    co.threads = o.threads;
    if (!o.isa.empty()) co.isa = ParseCpuIsa(o.isa);
    auto b = MakeCpuBackend(co);
    cpu = b.get();
    backend = std::move(b);
  } else {
    if (!o.isa.empty()) throw UsageError("--isa applies to the cpu backend only");
    BackendOptions bo;
    bo.threads = o.threads;
    backend = MakeBackend(o.backend, bo);
  }
  auto model = std::make_shared<IntQwen3>(artifact->weights(), *backend);
  doc["model"] = {{"source", source}, {"sha256", artifact->sha256()}};
  doc["engine"] = "int8";
  doc["backend"] = o.backend;
  doc["threads"] = backend->NumThreads();
  BenchModel bm;
  bm.what = o.backend + " backend";
  if (cpu) {
    doc["isa"] = std::string(CpuIsaName(cpu->isa()));
    doc["packed_weight_bytes"] = cpu->packed_weight_bytes();
    bm.what += " (" + std::string(CpuIsaName(cpu->isa())) + ")";
  }
  bm.what += ", " + std::to_string(backend->NumThreads()) + " threads";
  const ModelConfig& c = artifact->weights().config;
  bm.max_pos = c.max_pos;
  bm.weight_bytes_per_token = WeightBytesPerToken(c);
  // The closures own the model, and the backend and artifact it borrows.
  bm.prefill = [artifact, backend, model](int64_t tokens, uint64_t seed) {
    return PrefillSeconds(*model, tokens, seed);
  };
  bm.decode = [artifact, backend, model](int64_t batch, int64_t context, int64_t steps,
                                         uint64_t seed) {
    return DecodeSeconds(*model, batch, context, steps, seed);
  };
  return bm;
}

// The float engine (OpenBLAS): every fp32 weight byte is read once per decoded token.
BenchModel LoadFloatModel(const BenchOptions& o, nlohmann::json& doc) {
  if (o.backend != "cpu") throw UsageError("the float engine runs on the cpu (OpenBLAS)");
  if (!o.isa.empty()) throw UsageError("--isa applies to the int8 engine's cpu backend only");
  FloatEngineOptions fo;
  fo.dtype = ParseFloatDType(o.dtype.empty() ? "fp32" : o.dtype);
  fo.threads = o.threads;
  std::string source;
  std::shared_ptr<FloatCheckpoint> ckpt = o.model.LoadFloat(&source);
  // Hashed before the weights are widened: reading the file maps all of it for a moment, which
  // must not add to the model's peak.
  doc["model"] = {{"source", source}, {"sha256", ckpt->ContentSha256()}};
  auto model = std::make_shared<FloatQwen3>(*ckpt, fo);
  doc["engine"] = "float";
  doc["dtype"] = FloatDTypeName(fo.dtype);
  doc["backend"] = "cpu";
  doc["threads"] = BlasThreads();
  doc["blas"] = BlasDescription();
  doc["packed_weight_bytes"] = model->weight_bytes();
  BenchModel bm;
  bm.what = std::string("float engine ") + FloatDTypeName(fo.dtype) + ", " + BlasDescription() +
            ", " + std::to_string(BlasThreads()) + " threads";
  bm.max_pos = ckpt->config().max_pos;
  bm.weight_bytes_per_token = model->weight_bytes();
  bm.prefill = [ckpt, model](int64_t tokens, uint64_t seed) {
    return PrefillSeconds(*model, tokens, seed);
  };
  bm.decode = [ckpt, model](int64_t batch, int64_t context, int64_t steps, uint64_t seed) {
    return DecodeSeconds(*model, batch, context, steps, seed);
  };
  return bm;
}

void RunBench(const BenchOptions& o, CommandContext& ctx) {
  if (o.repeats < 1) throw UsageError("--repeats must be at least 1");
  if (o.context < 1 || o.decode_steps < 1) {
    throw UsageError("--context and --decode-steps must be at least 1");
  }
  if (o.bandwidth_mib < kMinProbeMib) {
    throw UsageError("--bandwidth-mib must be at least " + std::to_string(kMinProbeMib) +
                     " (the probe must not fit a cache)");
  }
  const std::vector<int64_t> prefill = ParseList(o.prefill, "--prefill");
  const std::vector<int64_t> batches = ParseList(o.decode_batches, "--decode-batch");
  const nlohmann::json fingerprint = fingerprint::CollectFingerprint();
  const std::string device = fingerprint::DeviceLabel(fingerprint, "cpu");

  // The machine's read bandwidth, measured the best way it allows: every CPU, the widest
  // loads, huge pages (4 KiB pages as well, for comparison). A shared machine's bandwidth moves
  // with its neighbours' load, so there are probes before, between and after the runs: the
  // roofline uses the best pass of all of them (the least flattering fraction), and each batch-1
  // run is also compared with the probe taken just before it.
  std::unique_ptr<CpuBackend> probe = MakeCpuBackend({0, BestCpuIsa(), true});
  const int64_t probe_bytes = o.bandwidth_mib << 20;
  const ReadBandwidthSample bw_huge = probe->MeasureReadBandwidth(probe_bytes, kProbePasses, true);
  const ReadBandwidthSample bw_small =
      probe->MeasureReadBandwidth(probe_bytes, kProbePasses, false);

  const bool peak_reset = ResetPeakRss();
  nlohmann::json doc;
  doc["tool_version"] = build::kToolVersion;
  doc["spec"] = build::kSpecVersion;
  doc["device"] = device;
  doc["fingerprint"] = fingerprint;
  const auto t_load = Clock::now();
  const int64_t huge_before = AnonHugePageBytes();
  BenchModel bm = o.engine == "float" ? LoadFloatModel(o, doc) : LoadIntModel(o, doc);
  const double load_s = Seconds(t_load);
  const int64_t weights_in_huge_pages =
      huge_before >= 0 && AnonHugePageBytes() >= 0 ? AnonHugePageBytes() - huge_before : -1;

  const int64_t weight_bytes = bm.weight_bytes_per_token;
  double bandwidth = GBps(bw_huge);                                       // GB/s
  double roofline = bandwidth * 1e9 / static_cast<double>(weight_bytes);  // tokens/s

  doc["transparent_hugepage"] = HugePageMode();
  doc["weights_in_huge_pages_bytes"] = weights_in_huge_pages;
  doc["load_s"] = load_s;
  doc["bandwidth"] = {{"huge_pages_gbps", bandwidth},
                      {"huge_page_bytes_backed", bw_huge.huge_page_bytes},
                      {"small_pages_gbps", GBps(bw_small)},
                      {"threads", bw_huge.threads},
                      {"buffer_bytes", bw_huge.bytes}};
  doc["roofline"] = {{"weight_bytes_per_token", weight_bytes},
                     {"decode_b1_tokens_per_s", roofline}};

  if (!o.json) {
    std::printf("detverify bench: %s\n", bm.what.c_str());
    std::printf("machine       %s, %lld CPUs, %.1f GiB, transparent huge pages: %s\n",
                device.c_str(), static_cast<long long>(fingerprint.value("logical_cores", 0)),
                static_cast<double>(fingerprint.value("memory_bytes", int64_t{0})) / (1 << 30),
                HugePageMode());
    std::printf("model         %s (sha256 %.16s), loaded and %s in %.2f s\n",
                doc["model"]["source"].get<std::string>().c_str(),
                doc["model"]["sha256"].get<std::string>().c_str(),
                o.engine == "float" ? "widened" : "packed", load_s);
    if (doc.contains("packed_weight_bytes")) {
      std::printf("weights       %.1f MB %s, %.1f MB of them in huge pages\n",
                  static_cast<double>(doc["packed_weight_bytes"].get<int64_t>()) / 1e6,
                  o.engine == "float" ? "of fp32 matrices" : "re-laid-out",
                  static_cast<double>(weights_in_huge_pages) / 1e6);
    }
    std::printf("bandwidth     %.1f GB/s read (huge pages, %d threads); %.1f GB/s on 4 KiB pages\n",
                bandwidth, bw_huge.threads, GBps(bw_small));
    std::fflush(stdout);
  }

  uint64_t seed = 1;
  for (int64_t tokens : prefill) {
    if (tokens > bm.max_pos)
      throw UsageError("--prefill " + std::to_string(tokens) + " exceeds max_pos");
    std::vector<double> runs;
    for (int r = 0; r < o.repeats; ++r) runs.push_back(bm.prefill(tokens, seed++));
    const double median = Median(runs), best = *std::min_element(runs.begin(), runs.end());
    const double tps = static_cast<double>(tokens) / median;
    doc["prefill"].push_back({{"tokens", tokens},
                              {"seconds_median", median},
                              {"seconds_best", best},
                              {"tokens_per_s", tps},
                              {"tokens_per_s_best", static_cast<double>(tokens) / best}});
    if (!o.json) {
      std::printf("prefill %-5lld %8.1f tokens/s   (median of %d; best %.1f)\n",
                  static_cast<long long>(tokens), tps, o.repeats,
                  static_cast<double>(tokens) / best);
      std::fflush(stdout);
    }
  }
  double b1 = 0.0;
  double best_probe = bandwidth;  // the best pass of every probe so far
  double paired_fraction = 0.0;   // median over b1 runs of tokens/s / roofline-at-that-moment
  int64_t engine_peak = 0;        // peak RSS outside the probes (they reset the peak)
  for (int64_t batch : batches) {
    if (o.context + o.decode_steps > bm.max_pos)
      throw UsageError("--context + --decode-steps exceeds max_pos");
    std::vector<double> runs;
    std::vector<double> paired;  // batch 1: fraction of the roofline at the probe just before
    for (int r = 0; r < o.repeats; ++r) {
      double bw_now = 0.0;
      if (batch == 1) {
        engine_peak = std::max(engine_peak, PeakRssBytes());
        const ReadBandwidthSample s = probe->MeasureReadBandwidth(probe_bytes / 2, 3, true);
        if (peak_reset) ResetPeakRss();  // the probe's buffer is not the engine's memory
        bw_now = GBps(s);
        if (bw_now > best_probe) best_probe = bw_now;
      }
      runs.push_back(bm.decode(batch, o.context, o.decode_steps, seed++));
      if (batch == 1 && bw_now > 0) {
        const double tps_run = static_cast<double>(o.decode_steps) / runs.back();
        paired.push_back(tps_run * static_cast<double>(weight_bytes) / (bw_now * 1e9));
      }
    }
    if (!paired.empty()) paired_fraction = Median(paired);
    const double median = Median(runs), best = *std::min_element(runs.begin(), runs.end());
    const double tokens = static_cast<double>(batch * o.decode_steps);
    const double tps = tokens / median;
    if (batch == 1) b1 = tps;
    nlohmann::json row = {{"batch", batch},          {"context", o.context},
                          {"steps", o.decode_steps}, {"seconds_median", median},
                          {"tokens_per_s", tps},     {"tokens_per_s_best", tokens / best}};
    if (batch > 1 && b1 > 0) row["vs_batch1"] = tps / b1;
    doc["decode"].push_back(row);
    if (!o.json) {
      std::printf("decode b%-4lld %8.1f tokens/s   (median of %d; best %.1f)",
                  static_cast<long long>(batch), tps, o.repeats, tokens / best);
      if (batch > 1 && b1 > 0) std::printf("   %.2fx batch 1", tps / b1);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  const int64_t peak_rss = std::max(engine_peak, PeakRssBytes());  // before the last probe
  // The last probe: the roofline uses the best pass of all of them.
  const ReadBandwidthSample bw_late = probe->MeasureReadBandwidth(probe_bytes, kProbePasses, true);
  probe.reset();
  doc["bandwidth"]["late_probe_gbps"] = GBps(bw_late);
  if (GBps(bw_late) > best_probe) best_probe = GBps(bw_late);
  bandwidth = best_probe;
  roofline = bandwidth * 1e9 / static_cast<double>(weight_bytes);
  doc["bandwidth"]["huge_pages_gbps"] = bandwidth;
  doc["roofline"]["decode_b1_tokens_per_s"] = roofline;
  if (b1 > 0) doc["roofline"]["decode_b1_fraction"] = b1 / roofline;
  if (paired_fraction > 0) doc["roofline"]["decode_b1_fraction_paired"] = paired_fraction;
  doc["peak_rss_bytes"] = peak_rss;
  doc["peak_rss_excludes_probe"] = peak_reset;
  if (o.json) {
    std::cout << doc.dump(1) << "\n";
  } else {
    std::printf(
        "bandwidth     %.1f GB/s in the last probe; the best pass of all probes: %.1f GB/s\n",
        GBps(bw_late), bandwidth);
    std::printf(
        "roofline      batch-1 decode <= %.1f tokens/s (%.1f MB of weights per token / %.1f GB/s)",
        roofline, static_cast<double>(weight_bytes) / 1e6, bandwidth);
    if (b1 > 0) std::printf("; decode b1 reaches %.0f%% of it", 100.0 * b1 / roofline);
    std::printf("\n");
    if (paired_fraction > 0) {
      std::printf("              paired with a probe just before each b1 run: %.0f%% (median)\n",
                  100.0 * paired_fraction);
    }
    std::printf("peak RSS      %.1f MB%s\n", static_cast<double>(peak_rss) / 1e6,
                peak_reset ? " (model load to last decode step)"
                           : " (includes the bandwidth probe's buffer)");
    std::printf(
        "(decode rows hold %lld tokens before %lld timed steps; prefill and decode times are "
        "medians)\n",
        static_cast<long long>(o.context), static_cast<long long>(o.decode_steps));
  }
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupBenchCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "prefill/decode throughput, memory bandwidth and the decode roofline");
  opt->model.AddTo(cmd);
  cmd->add_option("--engine", opt->engine,
                  "int8 (the integer engine) | float (fp32/bf16 through OpenBLAS; --hf DIR or "
                  "--preset)")
      ->capture_default_str()
      ->check(CLI::IsMember({"int8", "float"}));
  cmd->add_option("--dtype", opt->dtype, "float engine precision: fp32 (default) | bf16");
  cmd->add_option("--backend", opt->backend, "cpu | reference (int8 engine)")->capture_default_str();
  cmd->add_option("--threads", opt->threads, "threads (0: every CPU)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--isa", opt->isa,
                  "cpu backend ISA level: scalar | neon | neondot | avx2 | avx512vnni (default: "
                  "DETVERIFY_CPU_ISA or the best the CPU offers)");
  cmd->add_option("--prefill", opt->prefill, "prompt lengths to prefill, comma separated")
      ->capture_default_str();
  cmd->add_option("--decode-batch", opt->decode_batches, "decode batch sizes, comma separated")
      ->capture_default_str();
  cmd->add_option("--context", opt->context, "tokens in each row before the timed decode steps")
      ->capture_default_str();
  cmd->add_option("--decode-steps", opt->decode_steps, "timed decode steps per batch")
      ->capture_default_str();
  cmd->add_option("--repeats", opt->repeats, "runs per measurement (median reported)")
      ->capture_default_str();
  cmd->add_option("--bandwidth-mib", opt->bandwidth_mib, "buffer size of the bandwidth probe")
      ->capture_default_str();
  cmd->add_flag("--json", opt->json, "print one JSON document");
  cmd->callback([opt, &ctx]() { RunBench(*opt, ctx); });
}

}  // namespace dv::cli
