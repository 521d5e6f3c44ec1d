#include "checkpoint/hf_synth.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "base/check.h"
#include "base/file_io.h"
#include "base/named_list.h"
#include "base/sha256.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_config.h"
#include "checkpoint/hf_layout.h"
#include "engine/model_source.h"
#include "engine/prng.h"
#include "engine/synth.h"

namespace dv {
namespace {

// Uniform integers in [-kSpan, kSpan]; value = u * 2^-shift.
constexpr int64_t kSpan = 32767;
constexpr int kUnitShift = 15;      // u * 2^-15: uniform on (-1, 1), std 0.58
constexpr int kGammaShift = 12;     // gamma mantissas: g * 2^-12
constexpr int64_t kOutlierLo = 10;  // outlier factors, inclusive
constexpr int64_t kOutlierHi = 30;

FloatModelConfig FromIntPreset(const std::string& name) {
  const ModelConfig& s = FindSynthPreset(name).config;
  return Qwen3Shape(s.n_layers, s.hidden, s.n_q_heads, s.n_kv_heads, s.head_dim, s.intermediate,
                    s.vocab, s.max_pos);
}

const std::vector<HfSynthPreset>& Presets() {
  static const std::vector<HfSynthPreset> presets = [] {
    std::vector<HfSynthPreset> p = {
        {"qwen3-tiny", FromIntPreset("qwen3-tiny")},
        {"qwen3-0.6b", FromIntPreset("qwen3-0.6b")},
        {"qwen3-tiny-hd128", Qwen3Shape(2, 256, 4, 2, 128, 512, 1024, 2048)},
    };
    // Qwen3's own special-token ids where the vocabulary is Qwen3's.
    p[1].config.bos_token_id = 151643;
    p[1].config.eos_token_ids = {151645};
    return p;
  }();
  return presets;
}

// `count` distinct indices in [0, n), drawn from `rng`, ascending.
std::vector<int64_t> DistinctIndices(SplitMix64& rng, int64_t n, int64_t count) {
  std::set<int64_t> picked;
  while (static_cast<int64_t>(picked.size()) < std::min(count, n)) {
    picked.insert(rng.Uniform(0, n - 1));
  }
  return {picked.begin(), picked.end()};
}

// Per-tensor weight shift: u * 2^-(15 + k) has std ~ 1/sqrt(fan_in) (0.58 / 2^k), with
// k = floor(log2(sqrt(fan_in / 2))) = floor(floor(log2(fan_in / 2)) / 2).
int LinearShift(int64_t fan_in) {
  const auto half = static_cast<uint64_t>(std::max<int64_t>(1, fan_in / 2));
  return kUnitShift + (static_cast<int>(std::bit_width(half)) - 1) / 2;
}

class TensorMaker {
 public:
  TensorMaker(const FloatModelConfig& c, uint64_t seed) : seed_(seed) {
    SplitMix64 rng = TensorStream(seed, "synthetic.norm_outlier_channels");
    norm_outliers_ = DistinctIndices(rng, c.hidden, std::max<int64_t>(2, c.hidden / 256));
  }

  std::vector<uint8_t> Make(const HfTensorSpec& s) const {
    SplitMix64 rng = TensorStream(seed_, s.name);
    switch (s.role) {
      case HfTensorRole::kInputNorm:
      case HfTensorRole::kPostNorm:
        return Gamma(rng, s.shape[0], 2867, 5325, norm_outliers_);  // 0.7 .. 1.3
      case HfTensorRole::kFinalNorm:
        return Gamma(rng, s.shape[0], 2867, 5325, {});
      case HfTensorRole::kQNorm:
      case HfTensorRole::kKNorm:
        return Gamma(rng, s.shape[0], 2048, 6144, {});  // 0.5 .. 1.5
      case HfTensorRole::kEmbed:
        return Uniform(rng, s.shape[0], s.shape[1], kUnitShift, 0);
      case HfTensorRole::kLmHead:  // 4x the variance-preserving spread: peakier next-token laws
        return Uniform(rng, s.shape[0], s.shape[1], LinearShift(s.shape[1]) - 2, 0);
      case HfTensorRole::kO:
      case HfTensorRole::kDown:  // inputs not normalised: a few large input columns
        return Uniform(rng, s.shape[0], s.shape[1], LinearShift(s.shape[1]),
                       std::max<int64_t>(2, s.shape[1] / 512));
      case HfTensorRole::kQ:
      case HfTensorRole::kK:
      case HfTensorRole::kV:
      case HfTensorRole::kGate:
      case HfTensorRole::kUp:
        return Uniform(rng, s.shape[0], s.shape[1], LinearShift(s.shape[1]), 0);
      default:
        DV_CHECK(false) << "synthetic checkpoint: no generator for tensor " << s.name;
        __builtin_unreachable();
    }
  }

 private:
  static void Put(std::vector<uint8_t>& out, size_t i, uint16_t bits) {
    out[2 * i] = static_cast<uint8_t>(bits & 0xff);
    out[2 * i + 1] = static_cast<uint8_t>(bits >> 8);
  }

  // g * 2^-12 with g uniform in [lo, hi]; `outliers` channels multiplied by a factor in [10, 30].
  static std::vector<uint8_t> Gamma(SplitMix64& rng, int64_t n, int64_t lo, int64_t hi,
                                    const std::vector<int64_t>& outliers) {
    std::vector<int64_t> g(static_cast<size_t>(n));
    for (auto& v : g) v = rng.Uniform(lo, hi);
    for (int64_t ch : outliers) g[static_cast<size_t>(ch)] *= rng.Uniform(kOutlierLo, kOutlierHi);
    std::vector<uint8_t> out(g.size() * 2);
    for (size_t i = 0; i < g.size(); ++i) Put(out, i, Bf16FromScaledInt(g[i], kGammaShift));
    return out;
  }

  // [rows, cols] of u * 2^-shift, u uniform in [-32767, 32767]; `outlier_cols` input columns
  // (drawn after the values) multiplied by a factor in [10, 30].
  static std::vector<uint8_t> Uniform(SplitMix64& rng, int64_t rows, int64_t cols, int shift,
                                      int64_t outlier_cols) {
    const auto n = static_cast<size_t>(rows * cols);
    std::vector<int64_t> factor(static_cast<size_t>(cols), 1);
    std::vector<uint8_t> out(n * 2);
    for (size_t i = 0; i < n; ++i) {
      Put(out, i, Bf16FromScaledInt(rng.Uniform(-kSpan, kSpan), shift));
    }
    if (outlier_cols == 0) return out;
    for (int64_t col : DistinctIndices(rng, cols, outlier_cols)) {
      const int64_t f = rng.Uniform(kOutlierLo, kOutlierHi);
      // Redraw the column's values scaled (same stream, so still deterministic).
      for (int64_t r = 0; r < rows; ++r) {
        const auto i = static_cast<size_t>(r * cols + col);
        Put(out, i, Bf16FromScaledInt(rng.Uniform(-kSpan, kSpan) * f, shift));
      }
    }
    return out;
  }

  uint64_t seed_;
  std::vector<int64_t> norm_outliers_;
};

}  // namespace

FloatModelConfig Qwen3Shape(int64_t layers, int64_t hidden, int64_t q_heads, int64_t kv_heads,
                            int64_t head_dim, int64_t intermediate, int64_t vocab,
                            int64_t max_pos) {
  FloatModelConfig c;
  c.family = ModelFamily::kQwen3;
  c.n_layers = layers;
  c.hidden = hidden;
  c.n_q_heads = q_heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.intermediate = intermediate;
  c.vocab = vocab;
  c.max_pos = max_pos;
  c.rope_theta = 1e6;
  c.rms_norm_eps = 1e-6;
  c.qk_norm = true;
  c.tie_word_embeddings = false;
  c.storage_dtype = "bfloat16";
  c.bos_token_id = vocab - 2;
  c.eos_token_ids = {vocab - 1};
  return c;
}

std::vector<uint8_t> HfSynthTensorBf16(const FloatModelConfig& config, uint64_t seed,
                                       const HfTensorSpec& spec) {
  return TensorMaker(config, seed).Make(spec);
}

uint16_t Bf16FromScaledInt(int64_t v, int shift) {
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? uint16_t{0x8000} : uint16_t{0};
  uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int e = 63 - std::countl_zero(m);  // m in [2^e, 2^(e+1))
  // Keep 8 significant bits (the implicit one and 7 stored), rounding half to even.
  if (e > 7) {
    const int drop = e - 7;
    const uint64_t rest = m & ((uint64_t{1} << drop) - 1);
    const uint64_t half = uint64_t{1} << (drop - 1);
    m >>= drop;
    if (rest > half || (rest == half && (m & 1))) ++m;
    if (m == 256) {
      m = 128;
      ++e;
    }
  } else {
    m <<= 7 - e;
  }
  const int biased = e - shift + 127;  // value = (m / 128) * 2^(e - shift)
  DV_CHECK(biased >= 1 && biased <= 254)
      << "Bf16FromScaledInt: " << v << " * 2^-" << shift << " is outside the normal bfloat16 range";
  return static_cast<uint16_t>(sign | (biased << 7) | static_cast<int>(m - 128));
}

const HfSynthPreset& FindHfSynthPreset(const std::string& name) {
  return FindNamed<ArtifactError>(Presets(), name, "synthetic preset");
}

std::vector<std::string> HfSynthPresetNames() { return NamesOf(Presets()); }

void WriteHfSynthCheckpoint(const HfSynthPreset& preset, uint64_t seed, const std::string& dir) {
  const FloatModelConfig& c = preset.config;
  MakeDirectories(dir);
  // Header first (names sorted, offsets in that order), then each tensor as it is generated.
  std::map<std::string, HfTensorSpec> specs;
  for (HfTensorSpec& s : HfTensorLayout(c)) specs.emplace(s.name, std::move(s));
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  uint64_t offset = 0;
  for (const auto& [name, s] : specs) {
    uint64_t bytes = 2;
    for (int64_t d : s.shape) bytes *= static_cast<uint64_t>(d);
    header[name] = {
        {"dtype", "BF16"}, {"shape", s.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  std::vector<uint8_t> prefix(8);
  for (size_t b = 0; b < 8; ++b) prefix[b] = static_cast<uint8_t>(text.size() >> (8 * b));
  prefix.insert(prefix.end(), text.begin(), text.end());

  AtomicFileWriter out(dir + "/model.safetensors");
  out.Write(prefix);
  const TensorMaker maker(c, seed);
  for (const auto& [name, s] : specs) out.Write(maker.Make(s));
  out.Commit();
  // config.json last: a folder with it is complete (OpenHfSynthetic's cache test).
  const std::string config = Qwen3ConfigJson(c);
  WriteFileAtomic(dir + "/config.json",
                  {reinterpret_cast<const uint8_t*>(config.data()), config.size()});
}

std::string HfSyntheticCacheDir(const std::string& preset, uint64_t seed) {
  return CacheRoot() + "/synthetic-hf/" + preset + "-seed" + std::to_string(seed);
}

std::optional<HfSynthDigests> PinnedHfSynthDigests(const std::string& preset, uint64_t seed) {
  // Regenerate: detverify synth --preset P --seed 0 --format hf --out /tmp/p && sha256sum /tmp/p/*
  static const std::map<std::string, HfSynthDigests> kSeed0 = {
      {"qwen3-tiny",
       {"ee6e123e55bd576dce4437e82a9480f64d8a9fd798414bddf0fadd6ebd757e0f",
        "366e991ed8f2e9a77b92e9121c9e2d26508a3e1524ee2627b1dd0a1a532339a7"}},
      {"qwen3-tiny-hd128",
       {"bc52e3d65372939dc206b6854aa733cdd548692338ee231d64cf40ace01fa9cc",
        "7d6a72b6ff91da72dc1a4cdd5f442c2381c982bdcab152a3e487053e80dae188"}},
      {"qwen3-0.6b",
       {"e6af784ac81e72edde86570fbe2a82623d540baf9d7cd431678f14ca5439c4f4",
        "f63b79bf485f9fecd6316b678d0bbe22bc080ba3d51e8546918d70055c2fdc4f"}},
  };
  const auto it = kSeed0.find(preset);
  if (seed != 0 || it == kSeed0.end()) return std::nullopt;
  return it->second;
}

namespace {

constexpr const char* kSidecar = "sha256sums";

bool IsRegularFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// The digests a `sha256sums` file lists for model.safetensors and config.json, or nullopt when
// it is absent, not a regular file, or does not list both.
std::optional<HfSynthDigests> ReadSidecar(const std::string& path) {
  if (!IsRegularFile(path)) return std::nullopt;
  std::ifstream in(path);
  HfSynthDigests d;
  std::string hex, name;
  while (in >> hex >> name) {
    if (name == "model.safetensors") d.model_sha256 = hex;
    if (name == "config.json") d.config_sha256 = hex;
  }
  if (d.model_sha256.empty() || d.config_sha256.empty()) return std::nullopt;
  return d;
}

}  // namespace

std::string HfSynthCacheProblem(const std::string& preset, uint64_t seed, const std::string& dir) {
  const std::string model = dir + "/model.safetensors", config = dir + "/config.json";
  if (!IsRegularFile(model) || !IsRegularFile(config)) return "absent";
  std::optional<HfSynthDigests> want = PinnedHfSynthDigests(preset, seed);
  const char* against = "pinned";
  if (!want) {
    want = ReadSidecar(dir + "/" + kSidecar);
    against = "recorded in sha256sums";
    if (!want) return "it has no sha256sums listing both files";
  }
  const std::string model_sha256 = Sha256FileHex(model);
  if (model_sha256 != want->model_sha256) {
    return "model.safetensors has SHA-256 " + model_sha256.substr(0, 16) + "..., not the " +
           against + " " + want->model_sha256.substr(0, 16) + "...";
  }
  const std::string config_sha256 = Sha256FileHex(config);
  if (config_sha256 != want->config_sha256) {
    return "config.json has SHA-256 " + config_sha256.substr(0, 16) + "..., not the " + against +
           " " + want->config_sha256.substr(0, 16) + "...";
  }
  return "";
}

void PrintHfSynthesisNotice(const std::string& dir, const std::string& why) {
  if (why == "absent") {
    std::fprintf(stderr, "detverify: synthesizing the float checkpoint into %s (once)\n",
                 dir.c_str());
  } else {
    std::fprintf(stderr,
                 "detverify: the cached float checkpoint in %s fails its check (%s); "
                 "synthesizing it again\n",
                 dir.c_str(), why.c_str());
  }
}

std::unique_ptr<FloatCheckpoint> OpenHfSynthetic(const std::string& preset, uint64_t seed,
                                                 HfSynthesisNotice on_synthesis) {
  const HfSynthPreset& p = FindHfSynthPreset(preset);
  const std::string dir = HfSyntheticCacheDir(preset, seed);
  if (const std::string why = HfSynthCacheProblem(preset, seed, dir); !why.empty()) {
    if (on_synthesis) on_synthesis(dir, why);
    WriteHfSynthCheckpoint(p, seed, dir);
    const HfSynthDigests got{Sha256FileHex(dir + "/model.safetensors"),
                             Sha256FileHex(dir + "/config.json")};
    if (const auto pin = PinnedHfSynthDigests(preset, seed);
        pin && (got.model_sha256 != pin->model_sha256 || got.config_sha256 != pin->config_sha256)) {
      throw ArtifactError(dir + ": the synthesized " + preset + " checkpoint has SHA-256 " +
                          got.model_sha256 + ", not the pinned " + pin->model_sha256);
    }
    const std::string listing =
        got.model_sha256 + "  model.safetensors\n" + got.config_sha256 + "  config.json\n";
    WriteFileAtomic(dir + "/" + kSidecar,
                    {reinterpret_cast<const uint8_t*>(listing.data()), listing.size()});
  }
  return OpenHfCheckpoint(dir);
}

}  // namespace dv
