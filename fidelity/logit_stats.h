// How close the integer model's logits come to the float model's, position by position, and the
// perplexity either assigns to a text. Float statistics of integer results, computed outside the
// integer core (which only hands out int32 logits and their dyadic row scales).
//
// Definitions (those of DetLLM's fidelity fixture, ../shared/detllm/prepare/p-small/fidelity.json,
// where they overlap):
//   int logits     real_v = logits[v] * head_m[v] * m / 2^(k + head.k) for the row scale (m, k)
//                  of the position (IntQwen3's all_scale_m / all_scale_k)
//   int top-1      DetLLM's greedy pick: argmax of logits[v] * head_m[v] (int64, exact), lowest id
//                  on ties; int top-5 ranks by the same key
//   float top-1    argmax of the float logits, lowest id on ties; top-5 likewise
//   gap            float top-1 minus float top-2 logit, in units of the float logits' standard
//                  deviation over the vocabulary (n - 1 in the denominator, torch.std's default)
//   KL(float||int) sum_v p_f(v) (log p_f(v) - log p_i(v)), both softmaxes in float64
//   rel. L2        ||real_int - float|| / ||float|| over the vocabulary
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dv {

// log softmax of x in float64 (max subtracted; sum in index order). x finite.
std::vector<double> LogSoftmax(std::span<const double> x);

// The real logits of one position of the integer model (definition above).
std::vector<double> DequantizeLogits(std::span<const int32_t> logits,
                                     std::span<const int64_t> head_m, int64_t head_k,
                                     int64_t scale_m, int64_t scale_k);

// Indices of the k largest keys, largest first, lower index first among equal keys.
std::vector<int64_t> TopK(std::span<const double> keys, int64_t k);
std::vector<int64_t> TopKInt(std::span<const int64_t> keys, int64_t k);

struct GapBucket {
  double min_gap_sd = 0;  // positions whose float gap >= min_gap_sd standard deviations
  int64_t positions = 0;
  int64_t top1_agree = 0;
};

struct CompareSummary {
  int64_t positions = 0;
  int64_t top1_agree = 0;
  int64_t int_top1_in_float_top5 = 0;
  int64_t float_top1_in_int_top5 = 0;
  double kl_mean = 0, kl_max = 0;  // nats
  double rel_l2_mean = 0, rel_l2_max = 0;
  std::vector<GapBucket> by_gap;
  std::vector<int32_t> int_top1, float_top1;  // per position, in order

  double top1_rate() const;  // top1_agree / positions
};

// Accumulates positions one at a time.
class CompareAccumulator {
 public:
  // Gap buckets in standard deviations; DetLLM's fixture reports 0, 0.1, 0.25 and 0.5.
  explicit CompareAccumulator(std::vector<double> gap_thresholds_sd = {0.0, 0.1, 0.25, 0.5});

  // One position: the float model's logits [V] and the integer model's int32 logits [V] with its
  // row scale. Throws ExpectedError when the float logits are not finite.
  void Add(std::span<const float> float_logits, std::span<const int32_t> int_logits,
           std::span<const int64_t> head_m, int64_t head_k, int64_t scale_m, int64_t scale_k);
  void Add(std::span<const double> float_logits, std::span<const int32_t> int_logits,
           std::span<const int64_t> head_m, int64_t head_k, int64_t scale_m, int64_t scale_k);

  const CompareSummary& summary() const { return s_; }

 private:
  CompareSummary s_;
  double kl_sum_ = 0, l2_sum_ = 0;
};

// Perplexity windows over a token sequence (DetLLM's eval_ppl and Hugging Face's sliding-window
// protocol in one rule): windows of `ctx` tokens starting every `stride` tokens, only whole
// windows; each scores the next-token predictions no earlier window scored (stride == ctx:
// non-overlapping segments, each scoring its ctx - 1 predictions, DetLLM's protocol).
struct PerplexityWindow {
  int64_t begin = 0;         // first token of the window
  int64_t first_target = 0;  // first scored position within the window (>= 1)
};
// Throws ExpectedError when ctx < 2, stride < 1, stride > ctx, or the text is shorter than one
// window.
std::vector<PerplexityWindow> PerplexityWindows(int64_t tokens, int64_t ctx, int64_t stride);

struct PerplexitySummary {
  int64_t windows = 0, scored = 0;
  double nll_sum = 0;  // nats
  double ppl() const;  // exp(nll_sum / scored)
};

class PerplexityAccumulator {
 public:
  // The next token after a position and that position's logits (float or real int logits).
  void Add(std::span<const double> logits, int32_t next);
  void EndWindow() { ++s_.windows; }
  const PerplexitySummary& summary() const { return s_; }

 private:
  PerplexitySummary s_;
};

}  // namespace dv
