// Compiled with -ffp-contract=off -fno-math-errno (prepare/CMakeLists.txt): no fused multiply-add
// and no libm, so each operation below is one correctly rounded IEEE operation.
#include "prepare/calib_forward.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "engine/safetensors.h"
#include "prepare/fixed_order_gemm.h"
#include "prepare/parallel_ranges.h"
#include "prepare/portable_math.h"

namespace dv {
namespace {

size_t Sz(int64_t v) { return static_cast<size_t>(v); }

// A layer's weights in float64, transposed to [in, out] for GemmFixedOrder.
struct LayerF64 {
  std::vector<double> wqkv, bqkv;  // [H, (Q + 2 KV) d], [(Q + 2 KV) d] or empty
  std::vector<double> wo, bo;      // [Q d, H], [H] or empty
  std::vector<double> wgu, bgu;    // [H, 2 I], [2 I] or empty
  std::vector<double> wd, bd;      // [I, H], [H] or empty
  std::vector<double> g_in, g_post, g_q, g_k;
};

// dst[i * ld + col0 + o] = t[o][i] for t = [out, in].
void DecodeTransposed(const FloatTensor& t, std::vector<double>& dst, int64_t ld, int64_t col0) {
  const int64_t out = t.shape[0], in = t.shape[1];
  std::vector<double> row(Sz(in));
  for (int64_t o = 0; o < out; ++o) {
    DecodeFloat64(t, o * in, row);
    for (int64_t i = 0; i < in; ++i) dst[Sz(i * ld + col0 + o)] = row[Sz(i)];
  }
}

void DecodeInto(const FloatTensor& t, std::vector<double>& dst, int64_t at) {
  DecodeFloat64(t, 0, std::span<double>(dst.data() + at, Sz(t.numel())));
}

LayerF64 LoadLayer(const FloatModelConfig& c, const FloatLayerWeights& w) {
  LayerF64 l;
  const int64_t H = c.hidden, qd = c.q_dim(), kvd = c.kv_dim(), I = c.intermediate;
  const int64_t qkv = qd + 2 * kvd;
  l.wqkv.assign(Sz(H * qkv), 0.0);
  DecodeTransposed(w.q, l.wqkv, qkv, 0);
  DecodeTransposed(w.k, l.wqkv, qkv, qd);
  DecodeTransposed(w.v, l.wqkv, qkv, qd + kvd);
  if (w.q_bias) {
    l.bqkv.assign(Sz(qkv), 0.0);
    DecodeInto(*w.q_bias, l.bqkv, 0);
    DecodeInto(*w.k_bias, l.bqkv, qd);
    DecodeInto(*w.v_bias, l.bqkv, qd + kvd);
  }
  l.wo.assign(Sz(qd * H), 0.0);
  DecodeTransposed(w.o, l.wo, H, 0);
  if (w.o_bias) l.bo = ReadFloat64(*w.o_bias);
  l.wgu.assign(Sz(H * 2 * I), 0.0);
  DecodeTransposed(w.gate, l.wgu, 2 * I, 0);
  DecodeTransposed(w.up, l.wgu, 2 * I, I);
  if (w.gate_bias) {
    l.bgu.assign(Sz(2 * I), 0.0);
    DecodeInto(*w.gate_bias, l.bgu, 0);
    DecodeInto(*w.up_bias, l.bgu, I);
  }
  l.wd.assign(Sz(I * H), 0.0);
  DecodeTransposed(w.down, l.wd, H, 0);
  if (w.down_bias) l.bd = ReadFloat64(*w.down_bias);
  l.g_in = ReadFloat64(w.input_norm);
  l.g_post = ReadFloat64(w.post_norm);
  if (w.q_norm) l.g_q = ReadFloat64(*w.q_norm);
  if (w.k_norm) l.g_k = ReadFloat64(*w.k_norm);
  return l;
}

void AddBias(std::vector<double>& y, int64_t rows, const std::vector<double>& bias) {
  if (bias.empty()) return;
  const int64_t n = static_cast<int64_t>(bias.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) y[Sz(r * n + j)] = y[Sz(r * n + j)] + bias[Sz(j)];
  }
}

// sqrt(sum(x^2) / n + eps), the sum in index order (callers divide by it).
double RmsDenominator(const double* x, int64_t n, double eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum = sum + x[i] * x[i];
  return pmath::Sqrt(sum / static_cast<double>(n) + eps);
}

class Calibrator {
 public:
  Calibrator(const FloatCheckpoint& ckpt, const CalibrationSet& set, const CalibForwardOptions& opt)
      : ckpt_(ckpt),
        c_(ckpt.config()),
        set_(set),
        opt_(opt),
        isa_(opt.isa ? *opt.isa : GemmIsaFromEnvironment()) {
    const int64_t L = c_.n_layers, KV = c_.n_kv_heads, d = c_.head_dim;
    k_max_.assign(Sz(L * KV * d), 0.0);
    q_max_.assign(Sz(L * KV * d), 0.0);
    v_max_.assign(Sz(L * KV), 0.0);
    attn_in_.assign(Sz(L * c_.hidden), 0.0);
    mlp_in_.assign(Sz(L * c_.hidden), 0.0);
    down_in_.assign(Sz(L * c_.intermediate), 0.0);
    o_in_.assign(Sz(L * c_.q_dim()), 0.0);
    inv_freq_ = RopeInverseFrequencies(c_.rope_theta, d);
    const int64_t T = set.max_len(), half = d / 2;
    cos_.assign(Sz(T * half), 0.0);
    sin_.assign(Sz(T * half), 0.0);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t j = 0; j < half; ++j) {
        pmath::CosSin(static_cast<double>(t) * inv_freq_[Sz(j)], cos_[Sz(t * half + j)],
                      sin_[Sz(t * half + j)]);
      }
    }
  }

  CalibStats Run() {
    const FloatWeights& w = ckpt_.weights();
    const int64_t H = c_.hidden, S = set_.samples();
    // The residual stream of every sequence, [T, H] each.
    std::vector<std::vector<double>> hidden(Sz(S));
    for (int64_t s = 0; s < S; ++s) {
      const auto& ids = set_.sequences[Sz(s)];
      const int64_t T = static_cast<int64_t>(ids.size());
      hidden[Sz(s)].assign(Sz(T * H), 0.0);
      for (int64_t t = 0; t < T; ++t) {
        DecodeFloat64(w.embed, int64_t{ids[Sz(t)]} * H,
                      std::span<double>(hidden[Sz(s)].data() + t * H, Sz(H)));
      }
    }
    const int64_t total = c_.n_layers * S;
    for (int64_t l = 0; l < c_.n_layers; ++l) {
      const LayerF64 layer = LoadLayer(c_, w.layers[Sz(l)]);
      for (int64_t s = 0; s < S; ++s) {
        Layer(l, s, layer, hidden[Sz(s)]);
        if (opt_.progress) opt_.progress("calibration", l * S + s + 1, total);
      }
    }
    return Stats();
  }

 private:
  [[noreturn]] void Overflow(int64_t layer, int64_t seq, const char* where) const {
    throw ArtifactError(ckpt_.source() + ": the float64 calibration forward overflows at layer " +
                        std::to_string(layer) + " (" + where + ", calibration sequence " +
                        std::to_string(seq) + ")");
  }

  GemmRun Run(int threads) const {
    GemmRun r;
    r.threads = threads;
    r.isa = isa_;
    return r;
  }

  // x^ = h / rms(h) per row; returns false if a row's sum of squares is not finite.
  bool Normalize(const std::vector<double>& h, int64_t T, std::vector<double>& xhat) const {
    const int64_t H = c_.hidden;
    for (int64_t t = 0; t < T; ++t) {
      const double* row = h.data() + t * H;
      const double r = RmsDenominator(row, H, c_.rms_norm_eps);
      if (!(r < 1e300)) return false;  // inf or NaN
      for (int64_t i = 0; i < H; ++i) xhat[Sz(t * H + i)] = row[i] / r;
    }
    return true;
  }

  // DetLLM's gamma removal: |x^| where |gamma| >= 1e-4, else |x^ gamma| / 1e-4.
  static void RecordDegamma(const std::vector<double>& xhat, int64_t T, int64_t H,
                            const std::vector<double>& gamma, double* out) {
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t i = 0; i < H; ++i) {
        const double x = xhat[Sz(t * H + i)];
        const double g = gamma[Sz(i)] < 0 ? -gamma[Sz(i)] : gamma[Sz(i)];
        double v = x < 0 ? -x : x;
        if (g < 1e-4) v = (v * g) / 1e-4;
        if (v > out[i]) out[i] = v;
      }
    }
  }

  static void RecordAbsMax(const double* x, int64_t n, double* out) {
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[i] < 0 ? -x[i] : x[i];
      if (v > out[i]) out[i] = v;
    }
  }

  void NormHead(double* x, const std::vector<double>& gamma) const {
    const int64_t d = c_.head_dim;
    const double r = RmsDenominator(x, d, c_.rms_norm_eps);
    for (int64_t j = 0; j < d; ++j) x[j] = (x[j] / r) * gamma[Sz(j)];
  }

  void Rope(double* x, int64_t t) const {
    const int64_t half = c_.head_dim / 2;
    const double* cs = cos_.data() + t * half;
    const double* sn = sin_.data() + t * half;
    for (int64_t j = 0; j < half; ++j) {
      const double x1 = x[j], x2 = x[j + half];
      x[j] = x1 * cs[j] + (-x2) * sn[j];
      x[j + half] = x2 * cs[j] + x1 * sn[j];
    }
  }

  void Layer(int64_t l, int64_t s, const LayerF64& w, std::vector<double>& h) {
    const int64_t H = c_.hidden, Q = c_.n_q_heads, KV = c_.n_kv_heads, d = c_.head_dim;
    const int64_t qd = c_.q_dim(), kvd = c_.kv_dim(), I = c_.intermediate, group = c_.group();
    const int64_t qkvd = qd + 2 * kvd;
    const int64_t T = static_cast<int64_t>(h.size()) / H;
    const int threads = std::max(1, opt_.threads);

    // ---- attention ----
    std::vector<double> xhat(Sz(T * H)), a(Sz(T * H));
    if (!Normalize(h, T, xhat)) Overflow(l, s, "input RMSNorm");
    RecordDegamma(xhat, T, H, w.g_in, attn_in_.data() + l * H);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t i = 0; i < H; ++i) a[Sz(t * H + i)] = xhat[Sz(t * H + i)] * w.g_in[Sz(i)];
    }
    std::vector<double> qkv(Sz(T * qkvd));
    GemmFixedOrder(a.data(), w.wqkv.data(), qkv.data(), {T, H, qkvd, 0, 0, 0}, Run(threads));
    AddBias(qkv, T, w.bqkv);
    double* vmax = v_max_.data() + l * KV;
    for (int64_t t = 0; t < T; ++t) {
      double* row = qkv.data() + t * qkvd;
      for (int64_t kv = 0; kv < KV; ++kv) {
        const double* v = row + qd + kvd + kv * d;
        for (int64_t j = 0; j < d; ++j) {
          const double av = v[j] < 0 ? -v[j] : v[j];
          if (av > vmax[kv]) vmax[kv] = av;
        }
      }
      for (int64_t hq = 0; hq < Q; ++hq) {
        double* q = row + hq * d;
        if (c_.qk_norm) NormHead(q, w.g_q);
        Rope(q, t);
        RecordAbsMax(q, d, q_max_.data() + (l * KV + hq / group) * d);
      }
      for (int64_t kv = 0; kv < KV; ++kv) {
        double* k = row + qd + kv * d;
        if (c_.qk_norm) NormHead(k, w.g_k);
        Rope(k, t);
        RecordAbsMax(k, d, k_max_.data() + (l * KV + kv) * d);
      }
    }
    // K of each kv head transposed to [d, T] (the GEMM's [K, N] operand).
    std::vector<double> kt(Sz(KV * d * T));
    for (int64_t kv = 0; kv < KV; ++kv) {
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t j = 0; j < d; ++j) {
          kt[Sz((kv * d + j) * T + t)] = qkv[Sz(t * qkvd + qd + kv * d + j)];
        }
      }
    }
    std::vector<double> attn(Sz(T * qd));
    const double scale = 1.0 / pmath::Sqrt(static_cast<double>(d));
    // One query head: scores, causal softmax, context (heads split across threads).
    const auto attend = [&](int64_t hq) {
      const int64_t kv = hq / group;
      std::vector<double> p(Sz(T * T));
      GemmRun scores = Run(1);
      scores.causal_columns = true;
      GemmFixedOrder(qkv.data() + hq * d, kt.data() + kv * d * T, p.data(), {T, d, T, qkvd, T, T},
                     scores);
      for (int64_t i = 0; i < T; ++i) {
        double* row = p.data() + i * T;
        double m = row[0] * scale;
        for (int64_t j = 0; j <= i; ++j) {
          row[j] = row[j] * scale;
          if (row[j] > m) m = row[j];
        }
        double sum = 0.0;
        for (int64_t j = 0; j <= i; ++j) {
          row[j] = pmath::Exp(row[j] - m);
          sum = sum + row[j];
        }
        for (int64_t j = 0; j <= i; ++j) row[j] = row[j] / sum;
        for (int64_t j = i + 1; j < T; ++j) row[j] = 0.0;
      }
      GemmRun context = Run(1);
      context.causal_terms = true;
      GemmFixedOrder(p.data(), qkv.data() + qd + kvd + kv * d, attn.data() + hq * d,
                     {T, T, d, T, qkvd, qd}, context);
    };
    ParallelRanges(threads, Q, 1, [&](int64_t h0, int64_t h1) {
      for (int64_t hq = h0; hq < h1; ++hq) attend(hq);
    });
    for (int64_t t = 0; t < T; ++t) RecordAbsMax(attn.data() + t * qd, qd, o_in_.data() + l * qd);
    std::vector<double> delta(Sz(T * H));
    GemmFixedOrder(attn.data(), w.wo.data(), delta.data(), {T, qd, H, 0, 0, 0}, Run(threads));
    AddBias(delta, T, w.bo);
    for (size_t i = 0; i < h.size(); ++i) h[i] = h[i] + delta[i];

    // ---- MLP ----
    if (!Normalize(h, T, xhat)) Overflow(l, s, "post-attention RMSNorm");
    RecordDegamma(xhat, T, H, w.g_post, mlp_in_.data() + l * H);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t i = 0; i < H; ++i) a[Sz(t * H + i)] = xhat[Sz(t * H + i)] * w.g_post[Sz(i)];
    }
    std::vector<double> gu(Sz(T * 2 * I)), y(Sz(T * I));
    GemmFixedOrder(a.data(), w.wgu.data(), gu.data(), {T, H, 2 * I, 0, 0, 0}, Run(threads));
    AddBias(gu, T, w.bgu);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t i = 0; i < I; ++i) {
        const double g = gu[Sz(t * 2 * I + i)], u = gu[Sz(t * 2 * I + I + i)];
        y[Sz(t * I + i)] = (g / (1.0 + pmath::Exp(-g))) * u;
      }
      RecordAbsMax(y.data() + t * I, I, down_in_.data() + l * I);
    }
    GemmFixedOrder(y.data(), w.wd.data(), delta.data(), {T, I, H, 0, 0, 0}, Run(threads));
    AddBias(delta, T, w.bd);
    for (size_t i = 0; i < h.size(); ++i) h[i] = h[i] + delta[i];
  }

  CalibStats Stats() const {
    CalibStats st = CalibStats::ZerosFor(c_);
    // The statistics are float32 (DetLLM's form); a maximum beyond float32's range would become
    // an infinity the recipe cannot use.
    auto narrow = [&](const char* name, const std::vector<double>& from, std::vector<float>& to) {
      const size_t per_layer = from.size() / static_cast<size_t>(c_.n_layers);
      for (size_t i = 0; i < from.size(); ++i) {
        to[i] = static_cast<float>(from[i]);
        if (!(to[i] <= std::numeric_limits<float>::max())) {
          char value[32];
          std::snprintf(value, sizeof value, "%.3g", from[i]);
          throw ArtifactError(ckpt_.source() + ": the calibration maximum " + name + " of layer " +
                              std::to_string(i / per_layer) + " lies beyond float32's range (" +
                              value + ")");
        }
      }
    };
    narrow("k_chan_max", k_max_, st.k_chan_max);
    narrow("q_chan_max", q_max_, st.q_chan_max);
    narrow("v_max", v_max_, st.v_max);
    narrow("attn_in_max", attn_in_, st.attn_in_max);
    narrow("mlp_in_max", mlp_in_, st.mlp_in_max);
    narrow("down_in_max", down_in_, st.down_in_max);
    narrow("o_in_max", o_in_, st.o_in_max);
    st.calib_samples = set_.samples();
    st.calib_len = set_.max_len();
    st.calibration = set_.Describe();
    return st;
  }

  const FloatCheckpoint& ckpt_;
  const FloatModelConfig& c_;
  const CalibrationSet& set_;
  const CalibForwardOptions& opt_;
  std::vector<double> k_max_, q_max_, v_max_, attn_in_, mlp_in_, down_in_, o_in_;
  std::vector<double> inv_freq_, cos_, sin_;  // [d/2], [T, d/2]
  GemmIsa isa_;
};

}  // namespace

std::vector<double> RopeInverseFrequencies(double theta, int64_t head_dim) {
  std::vector<double> inv(Sz(head_dim / 2));
  for (int64_t j = 0; j < head_dim / 2; ++j) {
    inv[Sz(j)] = pmath::Pow(theta, (-2.0 * static_cast<double>(j)) / static_cast<double>(head_dim));
  }
  return inv;
}

CalibStats CollectCalibStats(const FloatCheckpoint& checkpoint, const CalibrationSet& calibration,
                             const CalibForwardOptions& options) {
  return Calibrator(checkpoint, calibration, options).Run();
}

}  // namespace dv
