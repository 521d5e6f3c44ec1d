#include "float_contrast/float_contrast.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>

namespace dv::float_contrast {

std::optional<int64_t> FirstChainDivergence(
    const std::vector<const std::vector<std::string>*>& chains) {
  if (chains.size() < 2) return std::nullopt;
  size_t steps = chains.front()->size();
  for (const auto* c : chains) steps = std::min(steps, c->size());
  for (size_t s = 0; s < steps; ++s) {
    const std::string& first = (*chains.front())[s];
    for (const auto* c : chains) {
      if ((*c)[s] != first) return static_cast<int64_t>(s);
    }
  }
  return std::nullopt;
}

std::optional<double> Cushion::Ratio() const {
  if (!finite || max_abs_delta == 0) return std::nullopt;
  return min_margin / max_abs_delta;
}

TopTwo FindTopTwo(std::span<const float> logits) {
  TopTwo t;
  t.top1 = logits[0] >= logits[1] || std::isnan(logits[1]) ? 0 : 1;
  t.top2 = 1 - t.top1;
  for (size_t i = 2; i < logits.size(); ++i) {
    const auto v = static_cast<int64_t>(i);
    if (logits[i] > logits[static_cast<size_t>(t.top1)]) {
      t.top2 = t.top1;
      t.top1 = v;
    } else if (logits[i] > logits[static_cast<size_t>(t.top2)]) {
      t.top2 = v;
    }
  }
  t.value1 = logits[static_cast<size_t>(t.top1)];
  t.value2 = logits[static_cast<size_t>(t.top2)];
  return t;
}

std::optional<Cushion> ComputeCushion(const std::vector<std::span<const float>>& logits) {
  if (logits.size() < 2 || logits.front().size() < 2) return std::nullopt;
  const size_t vocab = logits.front().size();
  for (const auto& row : logits) {
    if (row.size() != vocab) return std::nullopt;
  }
  Cushion c;
  c.rows = static_cast<int64_t>(logits.size());
  for (const auto& row : logits) {
    for (float v : row) c.finite &= std::isfinite(v);
  }
  // Differences and margins in double, one IEEE subtraction each (exact for two float32 values
  // whose exponents are within 29 of each other, as one row's logits are): any implementation of
  // the same definition -- numpy's, in tests/harness -- gets the same bits.
  c.min_margin = INFINITY;
  for (size_t r = 0; r < logits.size(); ++r) {
    const TopTwo t = FindTopTwo(logits[r]);
    const double margin = static_cast<double>(t.value1) - static_cast<double>(t.value2);
    if (margin < c.min_margin) {
      c.min_margin = margin;
      c.margin_row = r;
      c.margin_top1 = t.top1;
      c.margin_top2 = t.top2;
    }
  }
  c.max_abs_delta = -1;
  for (size_t a = 0; a < logits.size(); ++a) {
    for (size_t b = a + 1; b < logits.size(); ++b) {
      for (size_t v = 0; v < vocab; ++v) {
        const double d =
            std::fabs(static_cast<double>(logits[a][v]) - static_cast<double>(logits[b][v]));
        if (d > c.max_abs_delta) {
          c.max_abs_delta = d;
          c.delta_row_a = a;
          c.delta_row_b = b;
          c.delta_index = static_cast<int64_t>(v);
        }
      }
    }
  }
  if (c.max_abs_delta < 0) c.max_abs_delta = NAN;  // every difference was NaN
  if (!c.finite) {
    c.max_abs_delta = NAN;
    c.min_margin = NAN;
  }
  return c;
}

std::vector<float> FloatsFromLittleEndian(std::span<const uint8_t> bytes) {
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t bits = 0;
    for (size_t b = 0; b < 4; ++b) bits |= static_cast<uint32_t>(bytes[4 * i + b]) << (8 * b);
    out[i] = std::bit_cast<float>(bits);
  }
  return out;
}

FloatContrast CompareFloatRows(const std::vector<FloatRow>& rows) {
  FloatContrast out;
  out.rows = static_cast<int64_t>(rows.size());
  if (rows.empty()) return out;
  std::set<std::string> logits_finals, token_finals;
  std::set<size_t> lengths;
  std::vector<const std::vector<std::string>*> logits_chains, token_chains;
  std::vector<std::span<const float>> step0;
  out.compared_steps = static_cast<int64_t>(rows.front().token_chains->size());
  for (const FloatRow& r : rows) {
    if (!r.logits_chains->empty()) logits_finals.insert(r.logits_chains->back());
    if (!r.token_chains->empty()) token_finals.insert(r.token_chains->back());
    lengths.insert(r.token_chains->size());
    out.compared_steps = std::min(out.compared_steps, static_cast<int64_t>(r.token_chains->size()));
    logits_chains.push_back(r.logits_chains);
    token_chains.push_back(r.token_chains);
    if (!r.step0_logits.empty()) step0.push_back(r.step0_logits);
  }
  out.unique_logits = static_cast<int64_t>(logits_finals.size());
  out.unique_tokens = static_cast<int64_t>(token_finals.size());
  out.tokens_agree = token_finals.size() == 1 && lengths.size() == 1;
  out.first_token_divergence = FirstChainDivergence(token_chains);
  out.first_logits_divergence = FirstChainDivergence(logits_chains);
  out.rows_with_logits = static_cast<int64_t>(step0.size());
  out.cushion = ComputeCushion(step0);
  return out;
}

}  // namespace dv::float_contrast
