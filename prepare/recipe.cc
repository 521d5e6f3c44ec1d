// Compiled with -ffp-contract=off -fno-math-errno (prepare/CMakeLists.txt): each float64 operation
// is the single correctly rounded IEEE operation torch performs at the same step.
#include "prepare/recipe.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "prepare/parallel_ranges.h"
#include "prepare/portable_math.h"
#include "prepare/rope_table.h"

namespace dv {
namespace {

size_t Sz(int64_t v) { return static_cast<size_t>(v); }

constexpr double kTwo16 = 65536.0;

double Abs(double x) { return x < 0 ? -x : x; }

// 2^k as DetLLM forms it (Python 2.0 ** k, torch.pow(2.0, k)): exact for the shifts that occur.
double TwoPow(int64_t k) { return pmath::ScaleByPowerOf2(1.0, k); }

int64_t RoundToInt(double x) { return static_cast<int64_t>(pmath::RoundHalfEven(x)); }

[[noreturn]] void Fail(const FloatCheckpoint& ckpt, const std::string& what) {
  throw ArtifactError(ckpt.source() + ": " + what);
}

// Row o of a weight with input-channel factors folded: ((W[o][j] * f1[j]) * f2[j]), in DetLLM's
// order (its Wq = W.double() * gamma, then Wq * s_attn); a null factor is skipped.
struct FoldedWeight {
  const FloatTensor* w = nullptr;
  const std::vector<double>* f1 = nullptr;
  const std::vector<double>* f2 = nullptr;

  int64_t out() const { return w->shape[0]; }
  int64_t in() const { return w->shape[1]; }
  void Row(int64_t o, std::span<double> row) const {
    DecodeFloat64(*w, o * in(), row);
    if (f1) {
      for (size_t j = 0; j < row.size(); ++j) row[j] = row[j] * (*f1)[j];
    }
    if (f2) {
      for (size_t j = 0; j < row.size(); ++j) row[j] = row[j] * (*f2)[j];
    }
  }
};

class Quantizer {
 public:
  Quantizer(const FloatCheckpoint& ckpt, const CalibStats& stats, const RecipeOptions& opt)
      : ckpt_(ckpt), c_(ckpt.config()), stats_(stats), opt_(opt) {}

  QuantizedModel Run() {
    const FloatWeights& w = ckpt_.weights();
    const int64_t H = c_.hidden, Q = c_.n_q_heads, KV = c_.n_kv_heads, d = c_.head_dim;
    const int64_t I = c_.intermediate;
    total_ = 3 + 12 * c_.n_layers;
    nlohmann::ordered_json cfg;
    cfg["model_id"] = opt_.model_id;
    cfg["n_layers"] = c_.n_layers;
    cfg["hidden"] = H;
    cfg["n_q_heads"] = Q;
    cfg["n_kv_heads"] = KV;
    cfg["head_dim"] = d;
    cfg["intermediate"] = I;
    cfg["vocab"] = c_.vocab;
    cfg["max_pos"] = c_.max_pos;
    cfg["rope_frac_bits"] = 14;
    if (!c_.eos_token_ids.empty()) cfg["eos_token_id"] = c_.eos_token_ids.front();
    cfg["calib_samples"] = opt_.calib_samples;
    cfg["calib_len"] = opt_.calib_len;
    cfg["kv_margin"] = opt_.kv_margin;
    cfg["qk_alpha"] = opt_.qk_alpha;
    cfg["smooth_o"] = opt_.smooth_o;
    cfg["smooth_acts"] = opt_.smooth_acts;
    cfg["weight_bits"] = 8;
    // Only for the no-QK-Norm variant (docs/SPEC.md §9): a Qwen3 config.json stays DetLLM's.
    if (!c_.qk_norm) cfg["qk_norm"] = false;
    cfg["layers"] = nlohmann::ordered_json::array();

    Embedding(w.embed);
    Step();
    const std::vector<double> final_gamma = ReadFloat64(w.final_norm);
    cfg["head"] = Linear("head", {&w.lm_head, &final_gamma, nullptr});
    Step();
    const RopeTables rope = BuildRopeTables(c_.max_pos, d, c_.rope_theta);
    out_.tensors["rope.cos"] = MakeTensor(DType::kI16, {c_.max_pos, d}, rope.cos_q14);
    out_.tensors["rope.sin"] = MakeTensor(DType::kI16, {c_.max_pos, d}, rope.sin_q14);
    out_.rope_sensitive_entries = rope.sensitive_entries;
    Step();

    const double sqrt_d = pmath::Sqrt(static_cast<double>(d));
    for (int64_t i = 0; i < c_.n_layers; ++i) {
      const FloatLayerWeights& lw = w.layers[Sz(i)];
      const std::string p = "layers." + std::to_string(i) + ".";
      nlohmann::ordered_json L;
      const std::vector<double> g_attn = ReadFloat64(lw.input_norm);
      const std::vector<double> g_mlp = ReadFloat64(lw.post_norm);

      const Smoothing s_attn =
          opt_.smooth_acts ? ActSmoothing(Stat(stats_.attn_in_max, i, H),
                                          {{&lw.q, &g_attn}, {&lw.k, &g_attn}, {&lw.v, &g_attn}})
                           : Identity(H);
      Put(p + "as_m", {H}, s_attn.inv_m);
      L["as_k"] = s_attn.inv_k;
      const Smoothing s_mlp =
          opt_.smooth_acts
              ? ActSmoothing(Stat(stats_.mlp_in_max, i, H), {{&lw.gate, &g_mlp}, {&lw.up, &g_mlp}})
              : Identity(H);
      Put(p + "ms_m", {H}, s_mlp.inv_m);
      L["ms_k"] = s_mlp.inv_k;
      const Smoothing s_down =
          opt_.smooth_acts ? ActSmoothing(Stat(stats_.down_in_max, i, I), {{&lw.down, nullptr}})
                           : Identity(I);
      Put(p + "ds_m", {I}, s_down.inv_m);
      L["ds_k"] = s_down.inv_k;
      const Smoothing s_o = opt_.smooth_o
                                ? ActSmoothing(Stat(stats_.o_in_max, i, Q * d), {{&lw.o, nullptr}})
                                : Identity(Q * d);
      Put(p + "os_m", {Q * d}, s_o.inv_m);
      L["os_k"] = s_o.inv_k;
      Step();

      L["q"] = Linear(p + "q", {&lw.q, &g_attn, &s_attn.s_used});
      Step();
      L["k"] = Linear(p + "k", {&lw.k, &g_attn, &s_attn.s_used});
      Step();
      L["v"] = Linear(p + "v", {&lw.v, &g_attn, &s_attn.s_used});
      Step();
      L["o"] = Linear(p + "o", {&lw.o, &s_o.s_used, nullptr});
      Step();
      L["gate"] = Linear(p + "gate", {&lw.gate, &g_mlp, &s_mlp.s_used});
      Step();
      L["up"] = Linear(p + "up", {&lw.up, &g_mlp, &s_mlp.s_used});
      Step();
      L["down"] = Linear(p + "down", {&lw.down, &s_down.s_used, nullptr});
      Step();

      if (c_.qk_norm) {
        const auto [qg_m, qg_k] = GammaDyadic(*lw.q_norm, "layer " + std::to_string(i) + " q_norm");
        const auto [kg_m, kg_k] = GammaDyadic(*lw.k_norm, "layer " + std::to_string(i) + " k_norm");
        Put(p + "q_norm.m", {d}, qg_m);
        Put(p + "k_norm.m", {d}, kg_m);
        L["q_norm_k"] = qg_k;
        L["k_norm_k"] = kg_k;
      }
      Step();

      QkAndCacheScales(i, p, sqrt_d, L);
      for (int k = 0; k < 3; ++k) Step();
      cfg["layers"].push_back(L);
    }
    // DetLLM's dict had "layers" before the head was added, so json.dump writes "head" last.
    out_.config = std::move(cfg);
    return std::move(out_);
  }

 private:
  struct Smoothing {
    std::vector<int64_t> inv_m;
    int64_t inv_k = 0;
    std::vector<double> s_used;
  };
  struct Consumer {
    const FloatTensor* w;
    const std::vector<double>* gamma;  // folded into the columns before the max, or null
  };

  void Step() {
    if (opt_.progress) opt_.progress("quantization", ++done_, total_);
  }

  std::vector<double> Stat(const std::vector<float>& v, int64_t layer, int64_t n) const {
    std::vector<double> out(Sz(n));
    for (int64_t j = 0; j < n; ++j) out[Sz(j)] = static_cast<double>(v[Sz(layer * n + j)]);
    return out;
  }

  void Put(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
    out_.tensors[name] = MakeTensor(DType::kI64, std::move(shape), v);
  }

  // DetLLM's quant_embedding_per_row.
  void Embedding(const FloatTensor& e) {
    const int64_t V = e.shape[0], H = e.shape[1];
    std::vector<int8_t> e8(Sz(V * H));
    std::vector<int64_t> m(Sz(V)), k(Sz(V));
    ParallelRanges(opt_.threads, V, 64, [&](int64_t r0, int64_t r1) {
      std::vector<double> row(Sz(H));
      for (int64_t r = r0; r < r1; ++r) {
        DecodeFloat64(e, r * H, row);
        double amax = 0.0;
        for (double x : row) amax = std::max(amax, Abs(x));
        const double s = std::max(amax, 1e-12) / 127.0;
        for (int64_t j = 0; j < H; ++j) {
          e8[Sz(r * H + j)] =
              static_cast<int8_t>(std::clamp<int64_t>(RoundToInt(row[Sz(j)] / s), -127, 127));
        }
        int64_t kr = 15 - pmath::FloorLog2(s);
        int64_t mr = RoundToInt(s * TwoPow(kr));
        if (mr >= (int64_t{1} << 16)) {
          kr -= 1;
          mr = RoundToInt(s * TwoPow(kr));
        }
        m[Sz(r)] = std::max<int64_t>(mr, 1);
        k[Sz(r)] = kr;
      }
    });
    out_.tensors["embed.e8"] = MakeTensorI8({V, H}, std::move(e8));
    Put("embed.m", {V}, m);
    Put("embed.k", {V}, k);
  }

  // DetLLM's add_linear + quant_weight_per_channel: W' [out, in] -> w8t [in, out], m [out], k.
  nlohmann::ordered_json Linear(const std::string& name, const FoldedWeight& w) {
    const int64_t out = w.out(), in = w.in();
    std::vector<int8_t> w8t(Sz(in * out));
    std::vector<double> s(Sz(out));
    // Rows in blocks of 64, each block transposed into w8t at once (64 contiguous bytes per
    // input channel instead of one byte per cache line).
    constexpr int64_t kBlock = 64;
    const int64_t blocks = (out + kBlock - 1) / kBlock;
    ParallelRanges(opt_.threads, blocks, 1, [&](int64_t b0, int64_t b1) {
      std::vector<double> row(Sz(in));
      std::vector<int8_t> block(Sz(kBlock * in));
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t o0 = b * kBlock, rows = std::min(kBlock, out - o0);
        for (int64_t r = 0; r < rows; ++r) {
          w.Row(o0 + r, row);
          double amax = 0.0;
          for (double x : row) amax = std::max(amax, Abs(x));
          const double so = std::max(amax, 1e-12) / 127.0;
          s[Sz(o0 + r)] = so;
          for (int64_t j = 0; j < in; ++j) {
            block[Sz(r * in + j)] =
                static_cast<int8_t>(std::clamp<int64_t>(RoundToInt(row[Sz(j)] / so), -127, 127));
          }
        }
        for (int64_t j = 0; j < in; ++j) {
          for (int64_t r = 0; r < rows; ++r) w8t[Sz(j * out + o0 + r)] = block[Sz(r * in + j)];
        }
      }
    });
    const double smax = *std::max_element(s.begin(), s.end());
    int64_t k = 15 - pmath::FloorLog2(smax);
    std::vector<int64_t> m(Sz(out));
    auto fit = [&] {
      int64_t mmax = 0;
      for (int64_t o = 0; o < out; ++o) {
        m[Sz(o)] = RoundToInt(s[Sz(o)] * TwoPow(k));
        mmax = std::max(mmax, m[Sz(o)]);
      }
      return mmax;
    };
    if (fit() >= (int64_t{1} << 16)) {
      k -= 1;
      fit();
    }
    for (int64_t& v : m) v = std::max<int64_t>(v, 1);
    out_.tensors[name + ".w8t"] = MakeTensorI8({in, out}, std::move(w8t));
    Put(name + ".m", {out}, m);
    nlohmann::ordered_json j;
    j["k"] = k;
    j["min_m"] = *std::min_element(m.begin(), m.end());
    return j;
  }

  // DetLLM's act_smoothing (alpha 0.5).
  Smoothing ActSmoothing(const std::vector<double>& act_max, const std::vector<Consumer>& ws) {
    const int64_t n = static_cast<int64_t>(act_max.size());
    // wmax[j]: max over every consumer row of |W[o][j] * gamma[j]|.
    std::vector<double> wmax(Sz(n), 0.0);
    for (const Consumer& cons : ws) {
      const FoldedWeight fw{cons.w, cons.gamma, nullptr};
      const int64_t out = fw.out();
      ParallelRanges(opt_.threads, out, 64, [&](int64_t o0, int64_t o1) {
        // Each range writes its own partial maxima (max is exact and order-free).
        std::vector<double> local(Sz(n), 0.0), row(Sz(n));
        for (int64_t o = o0; o < o1; ++o) {
          fw.Row(o, row);
          for (int64_t j = 0; j < n; ++j) local[Sz(j)] = std::max(local[Sz(j)], Abs(row[Sz(j)]));
        }
        const std::lock_guard<std::mutex> lock(mu_);
        for (int64_t j = 0; j < n; ++j) wmax[Sz(j)] = std::max(wmax[Sz(j)], local[Sz(j)]);
      });
    }
    // tensor.pow(0.5) is torch's sqrt, for both exponents of alpha = 0.5.
    std::vector<double> s(Sz(n));
    for (int64_t j = 0; j < n; ++j) {
      s[Sz(j)] = pmath::PowTensorScalar(std::max(act_max[Sz(j)], 1e-5), 0.5) /
                 pmath::PowTensorScalar(std::max(wmax[Sz(j)], 1e-5), 1.0 - 0.5);
    }
    std::vector<double> sorted = s;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[Sz((n - 1) / 2)];  // torch.median: the lower middle value
    for (double& v : s) v = std::clamp(v / median, 1.0 / 64.0, 64.0);
    Smoothing out;
    std::vector<double> inv(Sz(n));
    for (int64_t j = 0; j < n; ++j) inv[Sz(j)] = 1.0 / s[Sz(j)];
    out.inv_k = 13 - pmath::FloorLog2(*std::max_element(inv.begin(), inv.end()));
    out.inv_m.resize(Sz(n));
    out.s_used.resize(Sz(n));
    for (int64_t j = 0; j < n; ++j) {
      out.inv_m[Sz(j)] = std::max<int64_t>(RoundToInt(inv[Sz(j)] * TwoPow(out.inv_k)), 1);
      out.s_used[Sz(j)] = 1.0 / (static_cast<double>(out.inv_m[Sz(j)]) * TwoPow(-out.inv_k));
    }
    return out;
  }

  static Smoothing Identity(int64_t n) {
    return {std::vector<int64_t>(Sz(n), 1), 0, std::vector<double>(Sz(n), 1.0)};
  }

  // DetLLM's fit_gamma_dyadic (14 bits, signed).
  std::pair<std::vector<int64_t>, int64_t> GammaDyadic(const FloatTensor& t,
                                                       const std::string& what) const {
    const std::vector<double> g = ReadFloat64(t);
    double amax = 0.0;
    for (double x : g) amax = std::max(amax, Abs(x));
    if (!(amax > 0.0))
      Fail(ckpt_, what + " gamma is all zero (DetLLM's recipe needs max|gamma| > 0)");
    int64_t k = 13 - pmath::FloorLog2(amax);
    std::vector<int64_t> m(g.size());
    auto fit = [&] {
      int64_t mmax = 0;
      for (size_t j = 0; j < g.size(); ++j) {
        m[j] = RoundToInt(g[j] * TwoPow(k));
        mmax = std::max(mmax, m[j] < 0 ? -m[j] : m[j]);
      }
      return mmax;
    };
    if (fit() >= (int64_t{1} << 14)) {
      k -= 1;
      fit();
    }
    return {m, k};
  }

  // fit_dyadic_float_vec: per element, with the same over-range step as the embedding.
  static FloatDyadic FitVec(double s) {
    int64_t k = 15 - pmath::FloorLog2(s);
    int64_t m = RoundToInt(s * TwoPow(k));
    if (m >= (int64_t{1} << 16)) {
      k -= 1;
      m = RoundToInt(s * TwoPow(k));
    }
    return {std::max<int64_t>(m, 1), k};
  }

  void QkAndCacheScales(int64_t i, const std::string& p, double sqrt_d, nlohmann::ordered_json& L) {
    const int64_t KV = c_.n_kv_heads, d = c_.head_dim;
    const std::vector<double> kmax = Stat(stats_.k_chan_max, i, KV * d);
    const std::vector<double> qmax = Stat(stats_.q_chan_max, i, KV * d);
    std::vector<double> kc(Sz(KV * d)), c(Sz(KV * d));
    for (int64_t j = 0; j < KV * d; ++j) {
      kc[Sz(j)] = std::max(kmax[Sz(j)], 1e-6);
      const double qc = std::max(qmax[Sz(j)], 1e-6);
      c[Sz(j)] = std::clamp(pmath::PowTensorScalar(kc[Sz(j)], opt_.qk_alpha) /
                                pmath::PowTensorScalar(qc, 1.0 - opt_.qk_alpha),
                            1.0 / 64.0, 64.0);
    }
    const int64_t qs_k = 13 - pmath::FloorLog2(*std::max_element(c.begin(), c.end()));
    std::vector<int64_t> qs_m(Sz(KV * d));
    std::vector<double> c_dyadic(Sz(KV * d));
    for (int64_t j = 0; j < KV * d; ++j) {
      qs_m[Sz(j)] = std::max<int64_t>(RoundToInt(c[Sz(j)] * TwoPow(qs_k)), 1);
      c_dyadic[Sz(j)] = static_cast<double>(qs_m[Sz(j)]) * TwoPow(-qs_k);
    }
    Put(p + "qs_m", {KV, d}, qs_m);
    L["qs_k"] = qs_k;
    std::vector<int64_t> kq_m(Sz(KV * d)), kq_k(Sz(KV * d)), ks_m(Sz(KV)), ks_k(Sz(KV)),
        vq_m(Sz(KV)), vq_k(Sz(KV));
    for (int64_t h = 0; h < KV; ++h) {
      double smoothed = kc[Sz(h * d)] / c_dyadic[Sz(h * d)];
      for (int64_t j = 1; j < d; ++j) {
        smoothed = std::max(smoothed, kc[Sz(h * d + j)] / c_dyadic[Sz(h * d + j)]);
      }
      const double s_kh = smoothed * opt_.kv_margin / 127.0;
      for (int64_t j = 0; j < d; ++j) {
        const FloatDyadic f = FitVec(c_dyadic[Sz(h * d + j)] * s_kh);
        kq_m[Sz(h * d + j)] = f.m;
        kq_k[Sz(h * d + j)] = f.k;
      }
      const FloatDyadic ks = FitDyadicFloat(s_kh / sqrt_d);
      const double s_v = static_cast<double>(stats_.v_max[Sz(i * KV + h)]) * opt_.kv_margin / 127.0;
      if (!(s_v > 0.0)) {
        Fail(ckpt_, "layer " + std::to_string(i) + " V head " + std::to_string(h) +
                        ": the calibration maximum is 0 (DetLLM's recipe needs a V range > 0)");
      }
      const FloatDyadic vq = FitDyadicFloat(s_v);
      ks_m[Sz(h)] = ks.m;
      ks_k[Sz(h)] = ks.k;
      vq_m[Sz(h)] = vq.m;
      vq_k[Sz(h)] = vq.k;
    }
    Put(p + "kq_m", {KV, d}, kq_m);
    Put(p + "kq_k", {KV, d}, kq_k);
    Put(p + "ks_m", {KV}, ks_m);
    Put(p + "ks_k", {KV}, ks_k);
    Put(p + "vq_m", {KV}, vq_m);
    Put(p + "vq_k", {KV}, vq_k);
  }

  const FloatCheckpoint& ckpt_;
  const FloatModelConfig& c_;
  const CalibStats& stats_;
  const RecipeOptions& opt_;
  QuantizedModel out_;
  std::mutex mu_;
  int64_t done_ = 0, total_ = 0;
};

}  // namespace

FloatDyadic FitDyadicFloat(double s) {
  int64_t k = 15 - pmath::FloorLog2(s);
  int64_t m = RoundToInt(s * TwoPow(k));  // Python's round(): ties to even
  if (m >= (int64_t{1} << 16)) {
    m = (m + 1) / 2;
    k -= 1;
  }
  return {m, k};
}

std::string CheckPreparable(const FloatModelConfig& c) {
  if (c.attention_bias || c.mlp_bias) {
    return "the model's projections have biases, which a detllm-v1 artifact cannot hold";
  }
  for (int64_t k : {c.hidden, c.intermediate, c.q_dim(), c.kv_dim()}) {
    if (k * 127 * 127 >= (int64_t{1} << 31)) {
      return "a GEMM inner dimension of " + std::to_string(k) +
             " breaks DetLLM's overflow bound K * 127^2 < 2^31";
    }
  }
  if (c.max_pos * 128 * 127 >= (int64_t{1} << 31)) {
    return "max_position_embeddings " + std::to_string(c.max_pos) +
           " breaks DetLLM's bound max_pos * 128 * 127 < 2^31 (probabilities times V)";
  }
  if (c.head_dim % 2 != 0) return "head_dim must be even (RoPE)";
  return "";
}

QuantizedModel QuantizeCheckpoint(const FloatCheckpoint& checkpoint, const CalibStats& stats,
                                  const RecipeOptions& options) {
  const std::string why = CheckPreparable(checkpoint.config());
  if (!why.empty()) throw ArtifactError(checkpoint.source() + ": " + why);
  return Quantizer(checkpoint, stats, options).Run();
}

}  // namespace dv
