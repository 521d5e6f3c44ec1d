// detverify bench: throughput of the integer engine on one backend (or of the float engine,
// --engine float) -- prefill and decode tokens/s, peak RSS -- next to this machine's memory-read
// bandwidth and the batch-1 decode roofline it implies (every weight byte is read once per
// decoded token: int8 for the integer engine, fp32 for the float one). Timing and the
// statistics use floating point; the integer engine does not. In stages: options checked, measured
// (Measure, with the text lines printed as results arrive), reported (BenchReport: the --json
// document), rendered (the text summary).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <type_traits>

#include "build_info.h"
#include "cli/command.h"
#include "cli/model_options.h"
#include "engine/backends/backend_registry.h"
#include "engine/backends/cpu_backend.h"
#include "engine/backends/cpu_weight_arena.h"
#include "engine/model.h"
#include "engine/prng.h"
#include "fingerprint/fingerprint.h"
#ifdef DV_CLI_FLOAT_CUDA
#include "float_engine/cuda_fp16_linear.h"
#endif
#include "float_engine/blas.h"
#include "float_engine/float_model.h"
#include "os/huge_pages.h"
#include "os/os_facts.h"

namespace dv::cli {
namespace {

struct BenchOptions {
  ModelOptions model;
  std::string engine = "int8";
  std::string dtype;  // float engine: fp32 (default; fp16 on cuda) | bf16 | fp16
  std::string backend = "cpu";
  // engine and backend as the enums every comparison uses, set once from the spellings above
  // (ResolveKinds) before anything else reads the options.
  EngineKind engine_kind = EngineKind::kInt8;
  BackendKind backend_kind = BackendKind::kCpu;
  int threads = 0;
  std::string isa;                       // cpu backend: force an ISA level
  std::string prefill = "64,512";        // prompt lengths
  std::string decode_batches = "1,4,8";  // rows decoded together
  std::string context = "64";            // tokens each decode row holds before the timed steps
  std::string scaling = "1,2,all";       // thread counts of the scaling table (cpu backend)
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

// Deterministic token ids in [0, vocab) (SplitMix64, engine/prng.h): the engine's speed does not
// depend on them.
std::vector<int32_t> BenchTokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  SplitMix64 rng(seed);
  for (auto& id : ids) id = static_cast<int32_t>(rng.Next() % static_cast<uint64_t>(vocab));
  return ids;
}

// int8 weight bytes one decoded token streams: every linear layer and the LM head.
int64_t WeightBytesPerToken(const ModelConfig& c) {
  const int64_t qd = c.n_q_heads * c.head_dim, kvd = c.n_kv_heads * c.head_dim;
  const int64_t per_layer =
      c.hidden * (qd + 2 * kvd) + qd * c.hidden + 3 * c.hidden * c.intermediate;
  return c.n_layers * per_layer + c.hidden * c.vocab;
}

// The process's peak resident set, and its reset (os/os_facts.h: VmHWM and clear_refs on Linux,
// getrusage on macOS, where it cannot be reset).
int64_t PeakRssBytes() { return os::PeakRssBytes(); }
bool ResetPeakRss() { return os::ResetPeakRss(); }

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

// Decode rows of the integer engine that hold more tokens than this get their context as seeded
// random K/V bytes instead of a prefill: a decode step reads every slot whatever it holds, so its
// cost depends on the context's length, not its values, and a batch of 4,096-token contexts is
// ready in a moment instead of minutes. The float engine always prefills.
constexpr int64_t kMaxPrefilledContext = 512;

bool ContextFilled(const BenchOptions& o, int64_t context) {
  return o.engine_kind == EngineKind::kInt8 && context > kMaxPrefilledContext;
}

// Writes `context` slots of seeded random int8 K/V bytes into every (layer, KV head) of `cache`.
void FillCacheRandom(const ModelConfig& c, int64_t context, uint64_t seed, KvCache& cache) {
  std::vector<int8_t> k8(static_cast<size_t>(c.head_dim)), v8(k8.size());
  uint64_t x = seed;
  auto next_byte = [&x]() {
    x = x * 6364136223846793005ull + 1442695040888963407ull;  // an LCG is plenty for filler
    return static_cast<int8_t>(x >> 56);
  };
  for (int64_t layer = 0; layer < c.n_layers; ++layer) {
    for (int64_t h = 0; h < c.n_kv_heads; ++h) {
      for (int64_t slot = 0; slot < context; ++slot) {
        for (size_t j = 0; j < k8.size(); ++j) {
          k8[j] = next_byte();
          v8[j] = next_byte();
        }
        cache.Write(layer, h, slot, k8.data(), v8.data());
      }
    }
  }
  cache.Advance(context);
}

// Decodes `steps` tokens in each of `batch` rows that already hold `context` tokens; returns the
// seconds of the decode calls only (greedy pick included). The integer engine adds its timed
// steps' forward calls to *profile (when given): where a step's time goes.
template <typename Model>
double DecodeSeconds(Model& model, int64_t batch, int64_t context, int64_t steps, uint64_t seed,
                     ForwardProfile* profile) {
  using T = EngineTypes<Model>;
  const auto& c = model.config();
  std::vector<std::unique_ptr<typename T::Cache>> caches;
  std::vector<std::vector<int32_t>> prompts;
  // The rows' logits back to back, as GenerateGreedy keeps them: a batch's LM head writes them
  // from its one GEMM (IntQwen3::LmHead).
  const auto vocab = static_cast<size_t>(c.vocab);
  std::vector<typename T::Logit> logits(static_cast<size_t>(batch) * vocab);
  std::vector<int32_t> next(static_cast<size_t>(batch));
  std::vector<typename T::Row> rows;
  // Every row's greedy pick: the integer engine's on the backend's threads, a row each, as
  // GenerateGreedy picks (a pick reads the whole vocabulary's logits and head scales).
  const auto PickAll = [&] {
    const auto pick = [&](int64_t begin, int64_t end, int) {
      for (int64_t r = begin; r < end; ++r) {
        next[static_cast<size_t>(r)] =
            model.GreedyPick(logits.data() + static_cast<size_t>(r) * vocab);
      }
    };
    if constexpr (std::is_same_v<Model, IntQwen3>) {
      model.backend().ParallelFor(batch, pick);
    } else {
      pick(0, batch, 0);
    }
  };
  bool filled = false;
  if constexpr (std::is_same_v<Model, IntQwen3>) filled = context > kMaxPrefilledContext;
  for (int64_t r = 0; r < batch; ++r) {
    const uint64_t row_seed = seed + static_cast<uint64_t>(r);
    caches.push_back(T::MakeCache(model, context + steps));
    prompts.push_back(BenchTokens(filled ? 1 : context, c.vocab, row_seed));
    rows.push_back({caches.back().get(), prompts.back().data(), filled ? 1 : context,
                    logits.data() + static_cast<size_t>(r) * vocab, nullptr});
    if constexpr (std::is_same_v<Model, IntQwen3>) {
      if (filled) FillCacheRandom(c, context, row_seed, *caches.back());
    }
  }
  if (filled) {
    for (int64_t r = 0; r < batch; ++r) {
      next[static_cast<size_t>(r)] = prompts[static_cast<size_t>(r)][0];
      rows[static_cast<size_t>(r)].ids = &next[static_cast<size_t>(r)];
    }
  } else {
    model.Forward(rows);
    PickAll();
    for (int64_t r = 0; r < batch; ++r) {
      rows[static_cast<size_t>(r)].ids = &next[static_cast<size_t>(r)];
      rows[static_cast<size_t>(r)].n_tokens = 1;
    }
  }
  if constexpr (std::is_same_v<Model, IntQwen3>) {
    model.set_profile(profile);
  } else {
    static_cast<void>(profile);
  }
  struct StopProfile {
    Model& model;
    ~StopProfile() {
      if constexpr (std::is_same_v<Model, IntQwen3>) model.set_profile(nullptr);
    }
  } stop{model};
  const auto t0 = Clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    model.Forward(rows);
    PickAll();
  }
  return Seconds(t0);
}

double GBps(const ReadBandwidthSample& s) {
  return s.best_ns > 0 ? static_cast<double>(s.bytes) / static_cast<double>(s.best_ns) : 0.0;
}

// ---- Stage 1: the options, checked before anything is measured. ----------------------------

struct BenchPlan {
  std::vector<int64_t> prefill;   // prompt lengths
  std::vector<int64_t> batches;   // decode batch sizes
  std::vector<int64_t> contexts;  // decode contexts
  std::vector<int> scaling;       // thread counts of the scaling table (empty: none)
};

// The thread counts of the scaling table: --scaling's list with "all" = every CPU this process
// may run on, sorted, without repeats. Empty for "off" and where the table does not apply (the
// reference backend has one thread; the float engine's threads belong to OpenBLAS).
std::vector<int> ScalingThreads(const BenchOptions& o) {
  if (o.scaling == "off" || o.scaling.empty() || o.engine_kind != EngineKind::kInt8 ||
      o.backend_kind != BackendKind::kCpu) {
    return {};
  }
  std::vector<int> out;
  std::stringstream in(o.scaling);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    if (item == "all") {
      out.push_back(CpuBackendDefaultThreads());
      continue;
    }
    const std::vector<int64_t> n = ParseList(item, "--scaling");
    if (n[0] > 1024) throw UsageError("--scaling: '" + item + "' is more than 1024 threads");
    out.push_back(static_cast<int>(n[0]));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

BenchPlan CheckOptions(const BenchOptions& o) {
  if (o.repeats < 1) throw UsageError("--repeats must be at least 1");
  if (o.decode_steps < 1) throw UsageError("--decode-steps must be at least 1");
  if (o.bandwidth_mib < kMinProbeMib) {
    throw UsageError("--bandwidth-mib must be at least " + std::to_string(kMinProbeMib) +
                     " (the probe must not fit a cache)");
  }
  if (o.engine_kind == EngineKind::kFloat) {
    FloatDTypeOn(o.backend_kind, o.backend, o.dtype);
    if (!o.isa.empty()) throw UsageError("--isa applies to the int8 engine's cpu backend only");
  } else {
    if (!o.dtype.empty()) throw UsageError("--dtype applies to --engine float");
    if (o.backend_kind != BackendKind::kCpu && !o.isa.empty()) {
      throw UsageError("--isa applies to the cpu backend only");
    }
  }
  BenchPlan plan{ParseList(o.prefill, "--prefill"), ParseList(o.decode_batches, "--decode-batch"),
                 ParseList(o.context, "--context"), ScalingThreads(o)};
  if (plan.contexts.empty()) throw UsageError("--context: give at least one length");
  return plan;
}

// ---- Stage 2: the measurements. ------------------------------------------------------------

struct PrefillResult {
  int64_t tokens = 0;
  double median_s = 0, best_s = 0;
};

struct DecodeResult {
  int64_t batch = 0;
  int64_t context = 0;
  double median_s = 0, best_s = 0;
  // Every run's timed steps together: their seconds, and (the int8 engine's host pass; empty
  // otherwise) where their forward calls, one a step, spent them.
  double total_s = 0;
  ForwardProfile profile;
};

// One row of the scaling table: the first prefill length, batch-1 decode and the largest decode
// batch at the first context, at `threads` threads (medians of --repeats runs, tokens/s).
struct ScalingRow {
  int threads = 0;
  double prefill = 0, decode_b1 = 0, decode_bn = 0;
};

// Everything a bench run measured, and the facts of what it measured.
struct BenchRun {
  nlohmann::json fingerprint;
  std::string device, source, sha256;
  std::string what;  // the engine and its settings, the first line of the text
  int threads = 0;
  std::optional<CpuIsa> isa;        // the int8 engine's cpu backend: its level
  int64_t prefetch_bytes = 0;       // the cpu backend's GEMM software prefetch (0: none)
  bool regions = true;              // the cpu backend runs a forward pass as one team region
  std::optional<FloatDType> dtype;  // the float engine: its precision
  std::string blas;                 // the float engine: OpenBLAS's description
  bool bf16_matrices = false;       // the float engine holds its linear weights as bf16
  int64_t packed_weight_bytes = 0;  // the cpu backend's re-laid-out or the float engine's weights
  int64_t weights_in_huge_pages = -1;
  double load_s = 0;
  int64_t weight_bytes = 0;  // per decoded token
  ReadBandwidthSample bw_huge, bw_small, bw_late;
  double best_probe_gbps = 0;      // the best pass of every probe: the roofline's bandwidth
  double paired_fraction = 0;      // median over b1 runs of tokens/s / roofline at that moment
  int64_t paired_probe_bytes = 0;  // the buffer of the probes paired with batch-1 runs
  double b1_tokens_per_s = 0;      // at the first context
  std::vector<PrefillResult> prefill;
  std::vector<DecodeResult> decode;
  int64_t scaling_prefill = 0, scaling_context = 0, scaling_batch = 1;
  std::vector<ScalingRow> scaling;
  int64_t peak_rss = 0;
  bool peak_reset = false;

  double Roofline() const { return best_probe_gbps * 1e9 / static_cast<double>(weight_bytes); }
};

// Called as results arrive, for output while a long bench is still running.
struct BenchProgress {
  std::function<void(const BenchRun&)> loaded;
  std::function<void(const BenchRun&, const PrefillResult&)> prefilled;
  std::function<void(const BenchRun&, const DecodeResult&)> decoded;
  std::function<void(const BenchRun&, const ScalingRow&)> scaled;
};

// The model under test, whichever engine: its measurements as closures, and what the report says
// about it.
struct BenchModel {
  std::function<double(int64_t tokens, uint64_t seed)> prefill;
  std::function<double(int64_t batch, int64_t context, int64_t steps, uint64_t seed,
                       ForwardProfile* profile)>
      decode;
  int64_t max_pos = 0;
  int64_t weight_bytes_per_token = 0;
};

// The int8 engine on the chosen backend.
BenchModel LoadIntModel(const BenchOptions& o, BenchRun& run) {
  std::shared_ptr<Artifact> artifact = o.model.Load(&run.source);
  run.sha256 = artifact->sha256();
  std::shared_ptr<Backend> backend;
  if (o.backend_kind == BackendKind::kCpu) {
    CpuBackendOptions co;
    co.threads = o.threads;
    if (!o.isa.empty()) co.isa = ParseCpuIsa(o.isa);
    auto b = MakeCpuBackend(co);
    run.isa = b->isa();
    run.prefetch_bytes = b->prefetch_bytes();
    run.regions = b->regions();
    backend = std::move(b);
  } else {
    BackendOptions bo;
    bo.threads = o.threads;
    backend = MakeBackend(o.backend_kind, bo);
  }
  auto model = std::make_shared<IntQwen3>(artifact->weights(), *backend);
  if (run.isa) {
    run.packed_weight_bytes = static_cast<const CpuBackend&>(*backend).packed_weight_bytes();
  }
  run.threads = backend->NumThreads();
  run.what = std::string(KindName(o.backend_kind)) + " backend";
  if (run.isa) {
    run.what += " (" + std::string(CpuIsaName(*run.isa)) +
                (run.prefetch_bytes > 0 ? ", prefetch " + std::to_string(run.prefetch_bytes) + " B"
                                        : std::string()) +
                (run.regions ? std::string() : ", one pool job per loop") + ")";
  }
  std::string forward, graphs;
  for (const auto& [key, value] : backend->DeviceFacts()) {
    if (key == "name") run.what += " on " + value;
    if (key == "forward") forward = value;
    if (key == "cuda_graphs") graphs = value;
  }
  // A GPU backend says which pass ran and whether decode replayed graphs.
  if (!forward.empty()) run.what += " (" + forward + " pass, graphs " + graphs + ")";
  run.what += ", " + std::to_string(run.threads) +
              (o.backend_kind == BackendKind::kCuda ? " host threads" : " threads");
  const ModelConfig& c = artifact->weights().config;
  BenchModel bm;
  bm.max_pos = c.max_pos;
  bm.weight_bytes_per_token = WeightBytesPerToken(c);
  // The closures own the model, and the backend and artifact it borrows.
  bm.prefill = [artifact, backend, model](int64_t tokens, uint64_t seed) {
    return PrefillSeconds(*model, tokens, seed);
  };
  bm.decode = [artifact, backend, model](int64_t batch, int64_t context, int64_t steps,
                                         uint64_t seed, ForwardProfile* profile) {
    return DecodeSeconds(*model, batch, context, steps, seed, profile);
  };
  return bm;
}

// The float engine (OpenBLAS and the small-batch GEMM): every weight byte it holds (fp32, or bf16
// in bf16 mode) is read once per decoded token.
BenchModel LoadFloatModel(const BenchOptions& o, BenchRun& run) {
  FloatEngineOptions fo;
  fo.dtype = ParseFloatDType(FloatDTypeOn(o.backend_kind, o.backend, o.dtype));
  fo.threads = o.threads;
#ifdef DV_CLI_FLOAT_CUDA
  if (o.backend_kind == BackendKind::kCuda) fo.linear = MakeCudaFp16Linear();
#endif
  std::shared_ptr<FloatCheckpoint> ckpt = o.model.LoadFloat(&run.source);
  // Hashed before the weights are widened: reading the file maps all of it for a moment, which
  // must not add to the model's peak.
  run.sha256 = ckpt->ContentSha256();
  auto model = std::make_shared<FloatQwen3>(*ckpt, fo);
  run.dtype = fo.dtype;
  run.threads = BlasThreads();
  run.blas = fo.linear ? fo.linear->Description() : BlasDescription(fo.dtype);
  run.packed_weight_bytes = model->weight_bytes();
  run.bf16_matrices = model->bf16_weights();
  run.what = std::string("float engine ") + FloatDTypeName(fo.dtype) + ", " + run.blas + ", " +
             std::to_string(run.threads) + " threads";
  BenchModel bm;
  bm.max_pos = ckpt->config().max_pos;
  bm.weight_bytes_per_token = model->weight_bytes();
  bm.prefill = [ckpt, model](int64_t tokens, uint64_t seed) {
    return PrefillSeconds(*model, tokens, seed);
  };
  bm.decode = [ckpt, model](int64_t batch, int64_t context, int64_t steps, uint64_t seed,
                            ForwardProfile* profile) {
    return DecodeSeconds(*model, batch, context, steps, seed, profile);
  };
  return bm;
}

// Batch-1 decode tokens/s at `context` (0 when the run has none).
double B1At(const BenchOptions& o, const BenchRun& run, int64_t context) {
  for (const DecodeResult& d : run.decode) {
    if (d.batch == 1 && d.context == context) {
      return static_cast<double>(o.decode_steps) / d.median_s;
    }
  }
  return 0.0;
}

ScalingRow MeasureScaling(const BenchOptions& o, const BenchRun& run, int threads, uint64_t& seed) {
  BenchOptions ot = o;
  ot.threads = threads;
  BenchRun unused;
  const BenchModel m = LoadIntModel(ot, unused);
  ScalingRow row;
  row.threads = threads;
  auto median_tps = [&](const std::function<double()>& once, double tokens) {
    std::vector<double> runs;
    for (int r = 0; r < o.repeats; ++r) runs.push_back(once());
    return tokens / Median(runs);
  };
  if (run.scaling_prefill > 0) {
    row.prefill = median_tps([&] { return m.prefill(run.scaling_prefill, seed++); },
                             static_cast<double>(run.scaling_prefill));
  }
  row.decode_b1 =
      median_tps([&] { return m.decode(1, run.scaling_context, o.decode_steps, seed++, nullptr); },
                 static_cast<double>(o.decode_steps));
  if (run.scaling_batch > 1) {
    row.decode_bn = median_tps(
        [&] {
          return m.decode(run.scaling_batch, run.scaling_context, o.decode_steps, seed++, nullptr);
        },
        static_cast<double>(run.scaling_batch * o.decode_steps));
  }
  return row;
}

BenchRun Measure(const BenchOptions& o, const BenchPlan& plan, const BenchProgress& progress) {
  BenchRun run;
  run.fingerprint = fingerprint::CollectFingerprint();
  run.device = fingerprint::DeviceLabel(run.fingerprint, "cpu");

  // The machine's read bandwidth, measured the best way it allows: every CPU, the widest
  // loads, huge pages (4 KiB pages as well, for comparison). A shared machine's bandwidth moves
  // with its neighbours' load, so there are probes before, between and after the runs: the
  // roofline uses the best pass of all of them (the least flattering fraction), and each batch-1
  // run is also compared with the probe taken just before it.
  std::unique_ptr<CpuBackend> probe = MakeCpuBackend({0, BestCpuIsa(), true, std::nullopt, true});
  const int64_t probe_bytes = o.bandwidth_mib << 20;
  run.bw_huge = probe->MeasureReadBandwidth(probe_bytes, kProbePasses, true);
  run.bw_small = probe->MeasureReadBandwidth(probe_bytes, kProbePasses, false);
  run.best_probe_gbps = GBps(run.bw_huge);

  run.peak_reset = ResetPeakRss();
  const auto t_load = Clock::now();
  const int64_t huge_before = os::AnonHugePageBytes();
  BenchModel bm =
      o.engine_kind == EngineKind::kFloat ? LoadFloatModel(o, run) : LoadIntModel(o, run);
  run.load_s = Seconds(t_load);
  run.weights_in_huge_pages =
      huge_before >= 0 && os::AnonHugePageBytes() >= 0 ? os::AnonHugePageBytes() - huge_before : -1;
  run.weight_bytes = bm.weight_bytes_per_token;
  if (progress.loaded) progress.loaded(run);

  // The probe paired with each batch-1 run reads as many bytes as a decode step's weights (at
  // most the probe's buffer, at least 64 MiB), read again and again as a step's are: a
  // last-level cache that holds part of either then serves both alike, where a smaller buffer
  // would be served more of itself and raise the roofline above what a step can see.
  const int64_t paired_bytes = std::clamp<int64_t>(
      (run.weight_bytes + (int64_t{1} << 16) - 1) >> 16 << 16, int64_t{64} << 20, probe_bytes);
  run.paired_probe_bytes = paired_bytes;
  uint64_t seed = 1;
  for (int64_t tokens : plan.prefill) {
    if (tokens > bm.max_pos) {
      throw UsageError("--prefill " + std::to_string(tokens) + " exceeds max_pos");
    }
    std::vector<double> runs;
    for (int r = 0; r < o.repeats; ++r) runs.push_back(bm.prefill(tokens, seed++));
    run.prefill.push_back({tokens, Median(runs), *std::min_element(runs.begin(), runs.end())});
    if (progress.prefilled) progress.prefilled(run, run.prefill.back());
  }
  int64_t engine_peak = 0;  // peak RSS outside the probes (they reset the peak)
  for (int64_t context : plan.contexts) {
    if (context + o.decode_steps > bm.max_pos) {
      throw UsageError("--context + --decode-steps exceeds max_pos");
    }
  }
  for (int64_t context : plan.contexts) {
    const bool first_context = context == plan.contexts.front();
    for (int64_t batch : plan.batches) {
      std::vector<double> runs;
      std::vector<double> paired;  // batch 1: fraction of the roofline at the probe just before
      ForwardProfile profile;
      for (int r = 0; r < o.repeats; ++r) {
        double bw_now = 0.0;
        if (batch == 1 && first_context) {
          engine_peak = std::max(engine_peak, PeakRssBytes());
          const ReadBandwidthSample s = probe->MeasureReadBandwidth(paired_bytes, 3, true);
          if (run.peak_reset) ResetPeakRss();  // the probe's buffer is not the engine's memory
          bw_now = GBps(s);
          run.best_probe_gbps = std::max(run.best_probe_gbps, bw_now);
        }
        runs.push_back(bm.decode(batch, context, o.decode_steps, seed++, &profile));
        if (batch == 1 && bw_now > 0) {
          const double tps_run = static_cast<double>(o.decode_steps) / runs.back();
          paired.push_back(tps_run * static_cast<double>(run.weight_bytes) / (bw_now * 1e9));
        }
      }
      if (!paired.empty()) run.paired_fraction = Median(paired);
      DecodeResult& d = run.decode.emplace_back();
      d.batch = batch;
      d.context = context;
      d.median_s = Median(runs);
      d.best_s = *std::min_element(runs.begin(), runs.end());
      for (double s : runs) d.total_s += s;
      d.profile = profile;
      if (batch == 1 && first_context) {
        run.b1_tokens_per_s =
            static_cast<double>(batch * o.decode_steps) / run.decode.back().median_s;
      }
      if (progress.decoded) progress.decoded(run, run.decode.back());
    }
  }
  run.peak_rss = std::max(engine_peak, PeakRssBytes());  // before the last probe
  // The last probe: the roofline uses the best pass of all of them.
  run.bw_late = probe->MeasureReadBandwidth(probe_bytes, kProbePasses, true);
  run.best_probe_gbps = std::max(run.best_probe_gbps, GBps(run.bw_late));
  probe.reset();

  // Thread scaling: the same measurements at 1, 2 and every thread, each with its own backend
  // and model (the one above is released first). Parallel efficiency = speed-up over the
  // fewest threads / the thread ratio: what each added core buys.
  if (!plan.scaling.empty()) {
    bm = BenchModel{};
    run.scaling_prefill = plan.prefill.empty() ? 0 : plan.prefill.front();
    run.scaling_context = plan.contexts.front();
    run.scaling_batch =
        plan.batches.empty() ? 1 : *std::max_element(plan.batches.begin(), plan.batches.end());
    for (int t : plan.scaling) {
      run.scaling.push_back(MeasureScaling(o, run, t, seed));
      if (progress.scaled) progress.scaled(run, run.scaling.back());
    }
  }
  return run;
}

// ---- Stage 3: the report (the numbers, as --json prints them). ------------------------------

double DecodeTokensPerS(const BenchOptions& o, const DecodeResult& d, double seconds) {
  return static_cast<double>(d.batch * o.decode_steps) / seconds;
}

// A decode row's mean step (over all its runs' timed steps), in seconds: the whole step (greedy
// pick included), the layers' products, the LM head's, and the rest (row operations, attention,
// the greedy pick); each product's bytes a step and the rate they were read at.
struct StepParts {
  double step_s = 0, layer_s = 0, head_s = 0, rest_s = 0;
  int64_t layer_bytes = 0, head_bytes = 0;
  double layer_gbps = 0, head_gbps = 0;
};

std::optional<StepParts> MeanStep(const DecodeResult& d) {
  const ForwardProfile& p = d.profile;  // a forward call a timed step
  if (p.calls <= 0) return std::nullopt;
  const auto steps = static_cast<double>(p.calls);
  StepParts s;
  s.step_s = d.total_s / steps;
  s.layer_s = static_cast<double>(p.layer_ns) * 1e-9 / steps;
  s.head_s = static_cast<double>(p.head_ns) * 1e-9 / steps;
  s.rest_s = std::max(0.0, s.step_s - s.layer_s - s.head_s);
  s.layer_bytes = p.layer_bytes / p.calls;
  s.head_bytes = p.head_bytes / p.calls;
  auto gbps = [](int64_t bytes, int64_t ns) {
    return ns > 0 ? static_cast<double>(bytes) / static_cast<double>(ns) : 0.0;
  };
  s.layer_gbps = gbps(p.layer_bytes, p.layer_ns);
  s.head_gbps = gbps(p.head_bytes, p.head_ns);
  return s;
}

nlohmann::json BenchReport(const BenchOptions& o, const BenchRun& run) {
  nlohmann::json doc;
  doc["tool_version"] = build::kToolVersion;
  doc["spec"] = build::kSpecVersion;
  doc["device"] = run.device;
  doc["fingerprint"] = run.fingerprint;
  doc["model"] = {{"source", run.source}, {"sha256", run.sha256}};
  doc["engine"] = KindName(o.engine_kind);
  doc["backend"] = KindName(o.backend_kind);
  doc["threads"] = run.threads;
  if (run.isa) {
    doc["isa"] = std::string(CpuIsaName(*run.isa));
    doc["prefetch_bytes"] = run.prefetch_bytes;
    doc["regions"] = run.regions;
    doc["packed_weight_bytes"] = run.packed_weight_bytes;
  }
  if (run.dtype) {
    doc["dtype"] = FloatDTypeName(*run.dtype);
    doc["blas"] = run.blas;
    doc["packed_weight_bytes"] = run.packed_weight_bytes;
  }
  doc["transparent_hugepage"] = os::HugePageMode();
  doc["weights_in_huge_pages_bytes"] = run.weights_in_huge_pages;
  doc["load_s"] = run.load_s;
  doc["bandwidth"] = {{"huge_pages_gbps", run.best_probe_gbps},
                      {"huge_page_bytes_backed", run.bw_huge.huge_page_bytes},
                      {"small_pages_gbps", GBps(run.bw_small)},
                      {"threads", run.bw_huge.threads},
                      {"prefetch_bytes", run.bw_huge.prefetch_bytes},
                      {"buffer_bytes", run.bw_huge.bytes},
                      {"late_probe_gbps", GBps(run.bw_late)}};
  doc["roofline"] = {{"weight_bytes_per_token", run.weight_bytes},
                     {"decode_b1_tokens_per_s", run.Roofline()}};
  if (run.b1_tokens_per_s > 0) {
    doc["roofline"]["decode_b1_fraction"] = run.b1_tokens_per_s / run.Roofline();
  }
  if (run.paired_fraction > 0) {
    doc["roofline"]["decode_b1_fraction_paired"] = run.paired_fraction;
    doc["roofline"]["paired_probe_bytes"] = run.paired_probe_bytes;
  }
  for (const PrefillResult& p : run.prefill) {
    doc["prefill"].push_back({{"tokens", p.tokens},
                              {"seconds_median", p.median_s},
                              {"seconds_best", p.best_s},
                              {"tokens_per_s", static_cast<double>(p.tokens) / p.median_s},
                              {"tokens_per_s_best", static_cast<double>(p.tokens) / p.best_s}});
  }
  for (const DecodeResult& d : run.decode) {
    const double tps = DecodeTokensPerS(o, d, d.median_s);
    nlohmann::json row = {
        {"batch", d.batch},        {"context", d.context},
        {"steps", o.decode_steps}, {"seconds_median", d.median_s},
        {"tokens_per_s", tps},     {"tokens_per_s_best", DecodeTokensPerS(o, d, d.best_s)}};
    const double b1 = B1At(o, run, d.context);
    if (d.batch > 1 && b1 > 0) row["vs_batch1"] = tps / b1;
    if (ContextFilled(o, d.context)) row["context_filled"] = true;
    if (const std::optional<StepParts> s = MeanStep(d)) {
      row["step"] = {{"timed_steps", d.profile.calls},
                     {"seconds_mean", s->step_s},
                     {"layer_products_seconds", s->layer_s},
                     {"layer_products_bytes", s->layer_bytes},
                     {"layer_products_gbps", s->layer_gbps},
                     {"head_seconds", s->head_s},
                     {"head_bytes", s->head_bytes},
                     {"head_gbps", s->head_gbps},
                     {"rest_seconds", s->rest_s}};
    }
    doc["decode"].push_back(row);
  }
  for (const ScalingRow& r : run.scaling) {
    const ScalingRow& base = run.scaling.front();
    const double ratio = static_cast<double>(r.threads) / base.threads;
    auto eff = [&](double v, double v0) { return v0 > 0 ? v / v0 / ratio : 0.0; };
    nlohmann::json jr = {{"threads", r.threads},
                         {"context", run.scaling_context},
                         {"decode_b1_tokens_per_s", r.decode_b1},
                         {"decode_b1_efficiency", eff(r.decode_b1, base.decode_b1)}};
    if (run.scaling_prefill > 0) {
      jr["prefill_tokens"] = run.scaling_prefill;
      jr["prefill_tokens_per_s"] = r.prefill;
      jr["prefill_efficiency"] = eff(r.prefill, base.prefill);
    }
    if (run.scaling_batch > 1) {
      jr["decode_batch"] = run.scaling_batch;
      jr["decode_batch_tokens_per_s"] = r.decode_bn;
      jr["decode_batch_efficiency"] = eff(r.decode_bn, base.decode_bn);
    }
    doc["scaling"].push_back(jr);
  }
  doc["peak_rss_bytes"] = run.peak_rss;
  doc["peak_rss_excludes_probe"] = run.peak_reset;
  return doc;
}

// ---- Stage 4: the text, printed as the results arrive. -------------------------------------

void RenderLoaded(const BenchRun& run) {
  std::printf("detverify bench: %s\n", run.what.c_str());
  std::printf("machine       %s, %lld CPUs, %.1f GiB, transparent huge pages: %s\n",
              run.device.c_str(), static_cast<long long>(run.fingerprint.value("logical_cores", 0)),
              static_cast<double>(run.fingerprint.value("memory_bytes", int64_t{0})) / (1 << 30),
              os::HugePageMode());
  const bool float_engine = run.dtype.has_value();
  std::printf("model         %s (sha256 %.16s), loaded and %s in %.2f s\n", run.source.c_str(),
              run.sha256.c_str(), float_engine ? "widened" : "packed", run.load_s);
  if (run.isa || float_engine) {
    std::printf("weights       %.1f MB %s, %.1f MB of them in huge pages\n",
                static_cast<double>(run.packed_weight_bytes) / 1e6,
                !float_engine       ? "re-laid-out"
                : run.bf16_matrices ? "of bf16 matrices (norms in fp32)"
                                    : "of fp32 matrices",
                static_cast<double>(run.weights_in_huge_pages) / 1e6);
  }
  const std::string read_with =
      run.bw_huge.prefetch_bytes > 0
          ? ", prefetch " + std::to_string(run.bw_huge.prefetch_bytes) + " B"
          : std::string(", plain loads");
  std::printf("bandwidth     %.1f GB/s read (huge pages, %d threads%s); %.1f GB/s on 4 KiB pages\n",
              GBps(run.bw_huge), run.bw_huge.threads, read_with.c_str(), GBps(run.bw_small));
  std::fflush(stdout);
}

void RenderPrefill(const BenchOptions& o, const PrefillResult& p) {
  std::printf("prefill %-5lld %8.1f tokens/s   (median of %d; best %.1f)\n",
              static_cast<long long>(p.tokens), static_cast<double>(p.tokens) / p.median_s,
              o.repeats, static_cast<double>(p.tokens) / p.best_s);
  std::fflush(stdout);
}

void RenderDecode(const BenchOptions& o, const BenchRun& run, const DecodeResult& d) {
  const double tps = DecodeTokensPerS(o, d, d.median_s);
  std::printf("decode b%-4lld %8.1f tokens/s   (median of %d; best %.1f)",
              static_cast<long long>(d.batch), tps, o.repeats, DecodeTokensPerS(o, d, d.best_s));
  const double b1 = B1At(o, run, d.context);
  if (d.batch > 1 && b1 > 0) std::printf("   %.2fx batch 1", tps / b1);
  if (o.context != "64") {
    std::printf("   context %lld%s", static_cast<long long>(d.context),
                ContextFilled(o, d.context) ? " (filled)" : "");
  }
  std::printf("\n");
  if (const std::optional<StepParts> s = MeanStep(d)) {
    std::printf(
        "  a step     %6.2f ms: layer products %.2f ms (%.1f GB/s), LM head %.2f ms (%.1f GB/s), "
        "the rest %.2f ms\n",
        s->step_s * 1e3, s->layer_s * 1e3, s->layer_gbps, s->head_s * 1e3, s->head_gbps,
        s->rest_s * 1e3);
  }
  std::fflush(stdout);
}

void RenderScaling(const BenchRun& run, const ScalingRow& r) {
  const ScalingRow& base = run.scaling.front();
  if (&r == &base) {
    std::printf(
        "scaling       prefill %lld, decode b1 and b%lld at context %lld by thread count "
        "(efficiency: speed-up over %d thread%s / thread ratio)\n",
        static_cast<long long>(run.scaling_prefill), static_cast<long long>(run.scaling_batch),
        static_cast<long long>(run.scaling_context), base.threads, base.threads == 1 ? "" : "s");
  }
  const double ratio = static_cast<double>(r.threads) / base.threads;
  auto eff = [&](double v, double v0) { return v0 > 0 ? 100.0 * v / v0 / ratio : 0.0; };
  std::printf("  %3d threads", r.threads);
  if (run.scaling_prefill > 0) {
    std::printf("   prefill %8.1f tok/s (%3.0f%%)", r.prefill, eff(r.prefill, base.prefill));
  }
  std::printf("   decode b1 %6.1f tok/s (%3.0f%%)", r.decode_b1, eff(r.decode_b1, base.decode_b1));
  if (run.scaling_batch > 1) {
    std::printf("   decode b%lld %7.1f tok/s (%3.0f%%)", static_cast<long long>(run.scaling_batch),
                r.decode_bn, eff(r.decode_bn, base.decode_bn));
  }
  std::printf("\n");
  std::fflush(stdout);
}

void RenderSummary(const BenchOptions& o, const BenchRun& run) {
  std::printf("bandwidth     %.1f GB/s in the last probe; the best pass of all probes: %.1f GB/s\n",
              GBps(run.bw_late), run.best_probe_gbps);
  std::printf(
      "roofline      batch-1 decode <= %.1f tokens/s (%.1f MB of weights per token / %.1f GB/s)",
      run.Roofline(), static_cast<double>(run.weight_bytes) / 1e6, run.best_probe_gbps);
  if (run.b1_tokens_per_s > 0) {
    std::printf("; decode b1 reaches %.0f%% of it", 100.0 * run.b1_tokens_per_s / run.Roofline());
  }
  std::printf("\n");
  if (run.paired_fraction > 0) {
    std::printf(
        "              paired with a probe of %.0f MB just before each b1 run: %.0f%% (median)\n",
        static_cast<double>(run.paired_probe_bytes) / 1e6, 100.0 * run.paired_fraction);
  }
  std::printf("peak RSS      %.1f MB%s\n", static_cast<double>(run.peak_rss) / 1e6,
              run.peak_reset ? " (model load to last decode step)"
                             : " (includes the bandwidth probe's buffer)");
  std::printf(
      "(decode rows hold the context's tokens before %lld timed steps; contexts past %lld tokens "
      "are filled with random K/V bytes, not prefilled; times are medians)\n",
      static_cast<long long>(o.decode_steps), static_cast<long long>(kMaxPrefilledContext));
  bool parts = false;
  for (const DecodeResult& d : run.decode) parts = parts || MeanStep(d).has_value();
  if (parts) {
    std::printf(
        "(a step: the mean over every run's timed steps; layer products and the LM head are the "
        "wall time of their int8 GEMMs and the rate they read weights at, the rest is the row "
        "operations, attention and the greedy pick)\n");
  }
}

// The spellings of --engine and --backend as enums, once (CLI11 has checked --engine).
void ResolveKinds(BenchOptions& o) {
  o.engine_kind = ParseKind<EngineKind>(o.engine).value_or(EngineKind::kInt8);
  o.backend_kind = ParseBackendName(o.backend);
}

// measure -> report -> render.
void RunBench(const BenchOptions& o, CommandContext& ctx) {
  const BenchPlan plan = CheckOptions(o);
  BenchProgress progress;
  if (!o.json) {
    progress.loaded = [](const BenchRun& run) { RenderLoaded(run); };
    progress.prefilled = [&](const BenchRun&, const PrefillResult& p) { RenderPrefill(o, p); };
    progress.decoded = [&](const BenchRun& run, const DecodeResult& d) { RenderDecode(o, run, d); };
    progress.scaled = [](const BenchRun& run, const ScalingRow& r) { RenderScaling(run, r); };
  }
  const BenchRun run = Measure(o, plan, progress);
  if (o.json) {
    std::cout << BenchReport(o, run).dump(1) << "\n";
  } else {
    RenderSummary(o, run);
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
                  "int8 (the integer engine) | float (fp32/bf16 through OpenBLAS; --hf DIR, "
                  "--gguf FILE or --preset)")
      ->capture_default_str()
      ->check(CLI::IsMember({"int8", "float"}));
  cmd->add_option("--dtype", opt->dtype,
                  "float engine precision: fp32 (default on cpu) | bf16 | fp16 (default on cuda)");
  cmd->add_option("--backend", opt->backend, "cpu | reference | cuda (int8 engine)")
      ->capture_default_str();
  cmd->add_option("--threads", opt->threads, "threads (0: every CPU)")->check(CLI::Range(0, 1024));
  cmd->add_option(
      "--isa", opt->isa,
      "cpu backend ISA level: scalar | neon | neondot | avx2 | avx512vnni | amx (default: "
      "DETVERIFY_CPU_ISA or the best the CPU offers)");
  cmd->add_option("--prefill", opt->prefill, "prompt lengths to prefill, comma separated")
      ->capture_default_str();
  cmd->add_option("--decode-batch", opt->decode_batches, "decode batch sizes, comma separated")
      ->capture_default_str();
  cmd->add_option("--context", opt->context,
                  "tokens in each row before the timed decode steps, comma separated (e.g. "
                  "64,2048,4096)")
      ->capture_default_str();
  cmd->add_option("--scaling", opt->scaling,
                  "thread counts of the scaling table, comma separated ('all': every CPU; 'off': "
                  "none; cpu backend)")
      ->capture_default_str();
  cmd->add_option("--decode-steps", opt->decode_steps, "timed decode steps per batch")
      ->capture_default_str();
  cmd->add_option("--repeats", opt->repeats, "runs per measurement (median reported)")
      ->capture_default_str();
  cmd->add_option("--bandwidth-mib", opt->bandwidth_mib,
                  "buffer size of the bandwidth probe (the probe before each batch-1 run reads "
                  "as many bytes as a step's weights, up to this)")
      ->capture_default_str();
  cmd->add_flag("--json", opt->json, "print one JSON document");
  cmd->callback([opt, &ctx]() {
    ResolveKinds(*opt);
    RunBench(*opt, ctx);
  });
}

}  // namespace dv::cli
