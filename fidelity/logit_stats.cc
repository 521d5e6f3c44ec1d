#include "fidelity/logit_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/check.h"
#include "base/expected_error.h"

namespace dv {
namespace {

template <typename Key>
std::vector<int64_t> TopKBy(std::span<const Key> keys, int64_t k) {
  std::vector<int64_t> idx(keys.size());
  std::iota(idx.begin(), idx.end(), 0);
  const auto n = static_cast<int64_t>(idx.size());
  k = std::min(k, n);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) {
    const Key ka = keys[static_cast<size_t>(a)], kb = keys[static_cast<size_t>(b)];
    return ka != kb ? ka > kb : a < b;
  });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

std::vector<double> LogSoftmax(std::span<const double> x) {
  double m = -INFINITY;
  for (double v : x) m = std::max(m, v);
  double sum = 0;
  for (double v : x) sum += std::exp(v - m);
  const double log_sum = std::log(sum);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = (x[i] - m) - log_sum;
  return out;
}

std::vector<double> DequantizeLogits(std::span<const int32_t> logits,
                                     std::span<const int64_t> head_m, int64_t head_k,
                                     int64_t scale_m, int64_t scale_k) {
  // logits * head_m < 2^47 and scale_m < 2^16: the product and the scale are exact doubles; one
  // rounding per value.
  const double scale =
      std::ldexp(static_cast<double>(scale_m), static_cast<int>(-(scale_k + head_k)));
  std::vector<double> out(logits.size());
  for (size_t v = 0; v < logits.size(); ++v) {
    out[v] = static_cast<double>(int64_t{logits[v]} * head_m[v]) * scale;
  }
  return out;
}

std::vector<int64_t> TopK(std::span<const double> keys, int64_t k) { return TopKBy(keys, k); }
std::vector<int64_t> TopKInt(std::span<const int64_t> keys, int64_t k) { return TopKBy(keys, k); }

double CompareSummary::top1_rate() const {
  return positions ? static_cast<double>(top1_agree) / static_cast<double>(positions) : 0.0;
}

CompareAccumulator::CompareAccumulator(std::vector<double> gap_thresholds_sd) {
  for (double t : gap_thresholds_sd) s_.by_gap.push_back({t, 0, 0});
}

void CompareAccumulator::Add(std::span<const float> float_logits,
                             std::span<const int32_t> int_logits, std::span<const int64_t> head_m,
                             int64_t head_k, int64_t scale_m, int64_t scale_k) {
  const std::vector<double> f(float_logits.begin(), float_logits.end());
  Add(std::span<const double>(f), int_logits, head_m, head_k, scale_m, scale_k);
}

void CompareAccumulator::Add(std::span<const double> f, std::span<const int32_t> int_logits,
                             std::span<const int64_t> head_m, int64_t head_k, int64_t scale_m,
                             int64_t scale_k) {
  const size_t V = f.size();
  DV_CHECK(int_logits.size() == V && head_m.size() == V && V >= 2)
      << "logits of different vocabularies: " << V << ", " << int_logits.size();
  for (double v : f) {
    if (!std::isfinite(v)) {
      throw ExpectedError("the float model's logits are not finite at position " +
                          std::to_string(s_.positions));
    }
  }
  std::vector<int64_t> key(V);
  for (size_t v = 0; v < V; ++v) key[v] = int64_t{int_logits[v]} * head_m[v];
  const std::vector<double> real = DequantizeLogits(int_logits, head_m, head_k, scale_m, scale_k);

  const std::vector<int64_t> ftop = TopK(f, 5), itop = TopKInt(key, 5);
  const bool agree = ftop[0] == itop[0];
  ++s_.positions;
  s_.top1_agree += agree;
  s_.int_top1_in_float_top5 += Contains(ftop, itop[0]);
  s_.float_top1_in_int_top5 += Contains(itop, ftop[0]);
  s_.int_top1.push_back(static_cast<int32_t>(itop[0]));
  s_.float_top1.push_back(static_cast<int32_t>(ftop[0]));

  // Gap in standard deviations of the float logits (n - 1 denominator).
  double mean = 0;
  for (double v : f) mean += v;
  mean /= static_cast<double>(V);
  double var = 0;
  for (double v : f) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / static_cast<double>(V - 1));
  const double gap = f[static_cast<size_t>(ftop[0])] - f[static_cast<size_t>(ftop[1])];
  for (GapBucket& b : s_.by_gap) {
    if (gap >= b.min_gap_sd * sd) {
      ++b.positions;
      b.top1_agree += agree;
    }
  }

  const std::vector<double> lf = LogSoftmax(f), li = LogSoftmax(real);
  double kl = 0, num = 0, den = 0;
  for (size_t v = 0; v < V; ++v) {
    kl += std::exp(lf[v]) * (lf[v] - li[v]);
    num += (real[v] - f[v]) * (real[v] - f[v]);
    den += f[v] * f[v];
  }
  kl = std::max(kl, 0.0);  // rounding can leave a tiny negative for identical distributions
  const double rel = den > 0 ? std::sqrt(num / den) : 0.0;
  kl_sum_ += kl;
  l2_sum_ += rel;
  s_.kl_max = std::max(s_.kl_max, kl);
  s_.rel_l2_max = std::max(s_.rel_l2_max, rel);
  s_.kl_mean = kl_sum_ / static_cast<double>(s_.positions);
  s_.rel_l2_mean = l2_sum_ / static_cast<double>(s_.positions);
}

std::vector<PerplexityWindow> PerplexityWindows(int64_t tokens, int64_t ctx, int64_t stride) {
  if (ctx < 2) throw ExpectedError("--ctx must be at least 2");
  if (stride < 1 || stride > ctx) throw ExpectedError("--stride must lie in [1, --ctx]");
  if (tokens < ctx) {
    throw ExpectedError("the text has " + std::to_string(tokens) +
                        " tokens, fewer than one window of --ctx " + std::to_string(ctx));
  }
  std::vector<PerplexityWindow> out;
  int64_t scored_until = 0;  // targets [1, scored_until] are scored
  for (int64_t begin = 0; begin + ctx <= tokens; begin += stride) {
    const int64_t last = begin + ctx - 1;  // the last target of the window
    const int64_t first = std::max(begin + 1, scored_until + 1);
    if (first > last) continue;
    out.push_back({begin, first - begin});
    scored_until = last;
  }
  return out;
}

double PerplexitySummary::ppl() const {
  return scored ? std::exp(nll_sum / static_cast<double>(scored)) : 0.0;
}

void PerplexityAccumulator::Add(std::span<const double> logits, int32_t next) {
  if (next < 0 || static_cast<size_t>(next) >= logits.size()) {
    throw ExpectedError("PerplexityAccumulator: token outside the vocabulary");
  }
  const std::vector<double> lp = LogSoftmax(logits);
  s_.nll_sum -= lp[static_cast<size_t>(next)];
  ++s_.scored;
}

}  // namespace dv
