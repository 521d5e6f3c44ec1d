#include "engine/synth.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/named_list.h"
#include "engine/dyadic.h"
#include "engine/intmath.h"
#include "engine/prng.h"

namespace dv {
namespace {

__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

// ---- 128-bit fixed point (Q60) for the RoPE tables ------------------------------------------

constexpr int kFrac = 60;
constexpr Int128 kOne = Int128{1} << kFrac;

UInt128 Isqrt128(UInt128 a) {
  UInt128 root = 0, bit = UInt128{1} << 126;
  while (bit > a) bit >>= 2;
  while (bit != 0) {
    if (a >= root + bit) {
      a -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  return root;
}

Int128 MulQ(Int128 a, Int128 b) { return (a * b) >> kFrac; }

// atan(num / den) for num/den <= 1/2 by its alternating power series.
Int128 AtanSeries(Int128 x_q /* Q60 */) {
  Int128 sum = 0, power = x_q;
  const Int128 x2 = MulQ(x_q, x_q);
  for (int64_t k = 0; power != 0; ++k) {
    const Int128 term = power / (2 * k + 1);
    sum += (k % 2 == 0) ? term : -term;
    power = MulQ(power, x2);
  }
  return sum;
}

Int128 PiQ() {  // Machin: pi = 16 atan(1/5) - 4 atan(1/239)
  return 16 * AtanSeries(kOne / 5) - 4 * AtanSeries(kOne / 239);
}

// log2(v) for an integer v >= 1 in Q60, by repeated squaring of the mantissa.
Int128 Log2Q(int64_t v) {
  const int64_t ip = Ilog2Floor(v);
  Int128 y = (Int128{v} << kFrac) >> ip;  // in [1, 2)
  Int128 result = Int128{ip} << kFrac;
  for (int bit = kFrac - 1; bit >= 0; --bit) {
    y = MulQ(y, y);
    if (y >= 2 * kOne) {
      y >>= 1;
      result += Int128{1} << bit;
    }
  }
  return result;
}

// 2^(-e) for e >= 0 in Q60: integer part by shifting, fraction bit by bit with the constants
// 2^(-2^-b) obtained by repeated square roots of 1/2.
Int128 Exp2NegQ(Int128 e) {
  const auto ip = static_cast<int>(e >> kFrac);
  Int128 frac = e & (kOne - 1);
  Int128 result = kOne;
  Int128 c = static_cast<Int128>(Isqrt128(static_cast<UInt128>(kOne / 2) << kFrac));  // 2^-1/2
  for (int b = 1; b <= kFrac && frac != 0; ++b) {
    if (frac & (Int128{1} << (kFrac - b))) result = MulQ(result, c);
    c = static_cast<Int128>(Isqrt128(static_cast<UInt128>(c) << kFrac));
  }
  return ip >= 127 ? 0 : result >> ip;
}

// (cos a, sin a) * 2^14 rounded half away from zero, for any angle a in Q60.
void CosSinQ14(Int128 angle, const Int128* atan_table, Int128 pi, int64_t& cos_q14,
               int64_t& sin_q14) {
  const Int128 two_pi = 2 * pi;
  angle %= two_pi;
  if (angle < 0) angle += two_pi;
  if (angle > pi) angle -= two_pi;  // now in (-pi, pi]
  int sign = 1;
  if (angle > pi / 2) {
    angle -= pi;
    sign = -1;
  } else if (angle < -pi / 2) {
    angle += pi;
    sign = -1;
  }
  Int128 x = kOne, y = 0, z = angle;
  for (int i = 0; i < kFrac; ++i) {
    const Int128 xs = x >> i, ys = y >> i;
    if (z >= 0) {
      x -= ys;
      y += xs;
      z -= atan_table[i];
    } else {
      x += ys;
      y -= xs;
      z += atan_table[i];
    }
  }
  // Undo the CORDIC gain exactly: divide by the vector's own length.
  const Int128 len = static_cast<Int128>(Isqrt128(static_cast<UInt128>(x * x + y * y)));
  auto round_div = [](Int128 num, Int128 den) {
    const Int128 mag = (num < 0 ? -num : num) + den / 2;
    return static_cast<int64_t>((num < 0 ? -1 : 1) * (mag / den));
  };
  cos_q14 = sign * round_div(x << 14, len);
  sin_q14 = sign * round_div(y << 14, len);
}

// ---- Presets ---------------------------------------------------------------------------------

const std::vector<SynthPreset>& Presets() {
  static const std::vector<SynthPreset> presets = {
      {"qwen3-tiny", {2, 128, 4, 2, 32, 384, 1024, 2048}},
      {"qwen3-0.6b", {28, 1024, 16, 8, 128, 3072, 151936, 40960}},
  };
  return presets;
}

// Scale constants of the synthetic model (real value = data * m / 2^k):
constexpr int64_t kEmbedShift = 22;        // embedding entries ~ +-0.9 (std)
constexpr int64_t kGammaShift = 13;        // QK-Norm gamma ~ 1 in 14-bit signed mantissas
constexpr int64_t kSmoothShift = 13;       // smoothing factors ~ 1 (mantissas ~ 2^13)
constexpr int64_t kQkSmoothShift = 8;      // QK smoothing c ~ 1 (mantissas ~ 2^8)
constexpr int64_t kDownSmoothShift = 10;   // down-input smoothing ~ 1 (mantissas ~ 2^10)
constexpr int64_t kCacheScaleNum = 33030;  // static K/V cache scale 4/127 = 33030 / 2^20
constexpr int64_t kCacheScaleShift = 20;

// Weight shift keeping y = x W variance-preserving: std(W) ~ 1/sqrt(in) with uniform int8
// entries (std ~73) and mantissas ~1.5 * 2^15.
int64_t LinearShift(int64_t in) { return 22 + Ilog2Floor(Isqrt(in)); }

class Builder {
 public:
  Builder(uint64_t seed) : seed_(seed) {}
  SplitMix64 Stream(const std::string& name) const { return TensorStream(seed_, name); }

  void I8(const std::string& name, std::vector<int64_t> shape) {
    SplitMix64 rng = Stream(name);
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<int8_t> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<int8_t>(rng.Uniform(-127, 127));
    tensors[name] = MakeTensorI8(std::move(shape), std::move(v));
  }
  std::vector<int64_t> I64(const std::string& name, std::vector<int64_t> shape, int64_t lo,
                           int64_t hi) {
    SplitMix64 rng = Stream(name);
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (auto& x : v) x = rng.Uniform(lo, hi);
    Put(name, std::move(shape), v);
    return v;
  }
  void Put(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& v,
           DType dtype = DType::kI64) {
    tensors[name] = MakeTensor(dtype, std::move(shape), v);
  }
  std::map<std::string, TensorData> tensors;

 private:
  uint64_t seed_;
};

}  // namespace

void IntegerRopeTables(int64_t max_pos, int64_t head_dim, std::vector<int64_t>& cos_q14,
                       std::vector<int64_t>& sin_q14) {
  const Int128 pi = PiQ();
  Int128 atan_table[kFrac];
  atan_table[0] = pi / 4;
  for (int i = 1; i < kFrac; ++i) atan_table[i] = AtanSeries(kOne >> i);
  const Int128 log2_theta = Log2Q(1000000);
  const int64_t half = head_dim / 2;
  std::vector<Int128> inv_freq(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) {
    inv_freq[static_cast<size_t>(j)] = Exp2NegQ(log2_theta * 2 * j / head_dim);
  }
  cos_q14.assign(static_cast<size_t>(max_pos * head_dim), 0);
  sin_q14.assign(static_cast<size_t>(max_pos * head_dim), 0);
  for (int64_t pos = 0; pos < max_pos; ++pos) {
    for (int64_t j = 0; j < half; ++j) {
      int64_t c = 0, s = 0;
      CosSinQ14(Int128{pos} * inv_freq[static_cast<size_t>(j)], atan_table, pi, c, s);
      for (int64_t rep : {j, j + half}) {  // the angle vector is tiled twice (rotate-half)
        cos_q14[static_cast<size_t>(pos * head_dim + rep)] = c;
        sin_q14[static_cast<size_t>(pos * head_dim + rep)] = s;
      }
    }
  }
}

const SynthPreset& FindSynthPreset(const std::string& name) {
  return FindNamed<ArtifactError>(Presets(), name, "synthetic preset");
}

std::vector<std::string> SynthPresetNames() { return NamesOf(Presets()); }

SynthArtifact MakeSynthArtifact(const SynthPreset& preset, uint64_t seed) {
  const ModelConfig& c = preset.config;
  const int64_t H = c.hidden, V = c.vocab, Q = c.n_q_heads, KV = c.n_kv_heads, d = c.head_dim,
                I = c.intermediate;
  Builder b(seed);
  constexpr int64_t kMantLo = kMantissaLo, kMantHi = kMantissaHi - 1;

  b.I8("embed.e8", {V, H});
  b.I64("embed.m", {V}, kMantLo, kMantHi);
  b.Put("embed.k", {V}, std::vector<int64_t>(static_cast<size_t>(V), kEmbedShift));
  // An untied LM head: a random head keeps greedy decoding from echoing the input token.
  b.I8("head.w8t", {H, V});
  const auto head_m = b.I64("head.m", {V}, kMantLo, kMantHi);
  std::vector<int64_t> cos_t, sin_t;
  IntegerRopeTables(c.max_pos, d, cos_t, sin_t);
  b.Put("rope.cos", {c.max_pos, d}, cos_t, DType::kI16);
  b.Put("rope.sin", {c.max_pos, d}, sin_t, DType::kI16);

  nlohmann::json layers = nlohmann::json::array();
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    nlohmann::json lc;
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
      b.I8(p + name + ".w8t", {in, out});
      const auto m = b.I64(p + name + ".m", {out}, kMantLo, kMantHi);
      lc[name] = {{"k", LinearShift(in)}, {"min_m", *std::min_element(m.begin(), m.end())}};
    };
    linear("q", H, Q * d);
    linear("k", H, KV * d);
    linear("v", H, KV * d);
    linear("o", Q * d, H);
    linear("gate", H, I);
    linear("up", H, I);
    linear("down", I, H);
    // QK-Norm gammas ~ 1: signed 14-bit mantissas with max |m| in [2^13, 2^14).
    for (const char* norm : {"q_norm", "k_norm"}) {
      auto g = b.I64(p + norm + ".m", {d}, 6144, 12288);
      g[0] = 12288;  // pins max |m| inside [2^13, 2^14)
      b.Put(p + norm + ".m", {d}, g);
    }
    lc["q_norm_k"] = kGammaShift;
    lc["k_norm_k"] = kGammaShift;
    // Smoothing factors ~ 1 (mantissas ~ 2^13).
    b.I64(p + "as_m", {H}, 7168, 9216);
    b.I64(p + "ms_m", {H}, 7168, 9216);
    // Down-input smoothing with 10-bit mantissas: |swiglu| < 2^35, so a * m of the down-input
    // quantization stays below 2^35 * 2^10.2 * 2^16 < 2^62.
    b.I64(p + "ds_m", {I}, 896, 1152);
    b.I64(p + "os_m", {Q * d}, 7168, 9216);
    for (const char* k : {"as_k", "ms_k", "os_k"}) lc[k] = kSmoothShift;
    lc["ds_k"] = kDownSmoothShift;
    // QK smoothing c ~ 1 with 8-bit mantissas: |q_norm| <= sqrt(d) * 2^20 * 2^14, so
    // |q_smooth| < 2^46 for d <= 128 and the per-head quantization's a * 2^15 never leaves int64
    // (docs/SPEC.md §6: no wrap events in synthetic models).
    const auto qs = b.I64(p + "qs_m", {KV, d}, 224, 288);
    lc["qs_k"] = kQkSmoothShift;
    // Static K-cache scale per channel: c_j * sK with c_j = qs_m / 2^10, sK = 4/127.
    std::vector<int64_t> kq_m(qs.size()), kq_k(qs.size());
    for (size_t j = 0; j < qs.size(); ++j) {
      const Dyadic f = FitDyadicRatio(qs[j] * kCacheScaleNum, int64_t{1} << kQkSmoothShift);
      kq_m[j] = f.m;
      kq_k[j] = f.k + kCacheScaleShift;
    }
    b.Put(p + "kq_m", {KV, d}, kq_m);
    b.Put(p + "kq_k", {KV, d}, kq_k);
    // Score scale sK / sqrt(d) and static V-cache scale sV ~ 4/127 per kv head.
    const Dyadic ks = FitDyadicRatio(kCacheScaleNum, Isqrt(d));
    b.Put(p + "ks_m", {KV}, std::vector<int64_t>(static_cast<size_t>(KV), ks.m));
    b.Put(p + "ks_k", {KV}, std::vector<int64_t>(static_cast<size_t>(KV), ks.k + kCacheScaleShift));
    b.I64(p + "vq_m", {KV}, 30000, 36000);
    b.Put(p + "vq_k", {KV}, std::vector<int64_t>(static_cast<size_t>(KV), kCacheScaleShift));
    layers.push_back(lc);
  }

  nlohmann::json cfg = {
      {"model_id", "synthetic:" + preset.name},
      {"synthetic", {{"preset", preset.name}, {"seed", seed}, {"generator", "detverify synth v1"}}},
      {"n_layers", c.n_layers},
      {"hidden", H},
      {"n_q_heads", Q},
      {"n_kv_heads", KV},
      {"head_dim", d},
      {"intermediate", I},
      {"vocab", V},
      {"max_pos", c.max_pos},
      {"rope_theta", 1000000},
      {"rope_frac_bits", 14},
      {"head", {{"k", LinearShift(H)}, {"min_m", *std::min_element(head_m.begin(), head_m.end())}}},
      {"layers", layers},
  };
  SynthArtifact out;
  out.tensors = std::move(b.tensors);
  out.config_json = cfg.dump(1) + "\n";
  return out;
}

void WriteSynthArtifact(const SynthPreset& preset, uint64_t seed, const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    throw ArtifactError(dir + ": cannot create folder: " + std::strerror(errno));
  }
  const SynthArtifact a = MakeSynthArtifact(preset, seed);
  WriteSafetensors(dir + "/model.safetensors", a.tensors);
  WriteFileAtomic(dir + "/config.json",
                  {reinterpret_cast<const uint8_t*>(a.config_json.data()), a.config_json.size()});
}

}  // namespace dv
