// What a scenario's float contrast rows (engine: float) show, measured and never judged: how many
// distinct final hashes they end on, whether their greedy tokens agree (float logits usually
// disagree from step 0 while the tokens often stay the same), the first step where their tokens
// part, and the step-0 cushion -- the largest |Δlogit| between any two rows against the smallest
// top-1/top-2 margin of any row. Pure functions of chains and logits; no I/O, no DB.
//
// The cushion reads: two rows can pick different step-0 tokens only if some logit moved by at
// least half a row's margin, so a margin that is many times the largest |Δlogit| means this prompt
// happened to have room; a margin near it means one more reduction order would change the text.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dv::float_contrast {

// The first step at which not every chain list holds the same hash, compared over the steps all
// of them have (chains are cumulative, so it is also the first step where the hashed values
// differ); nullopt when they agree there. Fewer than two lists: nullopt.
std::optional<int64_t> FirstChainDivergence(
    const std::vector<const std::vector<std::string>*>& chains);

// The step-0 cushion of float rows' logits (each [vocab] float32, all of one length).
struct Cushion {
  int64_t rows = 0;          // rows compared (>= 2)
  double max_abs_delta = 0;  // max over row pairs (a, b) and entries v of |L_a[v] - L_b[v]|
  size_t delta_row_a = 0, delta_row_b = 0;  // the pair (indices into the input) where it is
  int64_t delta_index = 0;                  // and the vocabulary entry
  double min_margin = 0;                    // min over rows of top-1 logit minus top-2 logit (>= 0)
  size_t margin_row = 0;                    // the row with that margin
  int64_t margin_top1 = 0, margin_top2 = 0;  // that row's top-1 and top-2 vocabulary entries
  bool finite = true;  // every logit is finite (else the numbers above are not)
  // min_margin / max_abs_delta: how many times over the margin covers the largest move; nullopt
  // when the rows are identical (no move at all) or a logit is not finite.
  std::optional<double> Ratio() const;
};

// nullopt when fewer than two rows are given, a row has fewer than two entries, or the rows'
// lengths differ (rows of different vocabularies cannot be compared entry by entry).
std::optional<Cushion> ComputeCushion(const std::vector<std::span<const float>>& logits);

// One float row as the statistics see it: the chains of its steps and, when recorded, its step-0
// logits. Callers pass only rows that produced hashes (status ok, at least one step).
struct FloatRow {
  const std::vector<std::string>* logits_chains = nullptr;  // per step, step 0 first
  const std::vector<std::string>* token_chains = nullptr;
  std::span<const float> step0_logits;  // empty when not recorded
};

struct FloatContrast {
  int64_t rows = 0;           // rows with hashes
  int64_t unique_logits = 0;  // distinct final logits chains
  int64_t unique_tokens = 0;  // distinct final token chains
  // The rows end on one token chain after the same number of steps.
  bool tokens_agree = false;
  std::optional<int64_t> first_token_divergence;   // FirstChainDivergence of the token chains
  std::optional<int64_t> first_logits_divergence;  // of the logits chains
  int64_t compared_steps = 0;      // the fewest steps of any row (what the divergences span)
  std::optional<Cushion> cushion;  // over the rows with step-0 logits
  int64_t rows_with_logits = 0;    // how many rows had step-0 logits recorded
};

FloatContrast CompareFloatRows(const std::vector<FloatRow>& rows);

// The top-1 and top-2 entries of `logits` (size >= 2): the lowest index wins a tie, as the
// engines' argmax does. Non-finite entries are compared as they are (NaN never wins).
struct TopTwo {
  int64_t top1 = 0, top2 = 1;
  float value1 = 0, value2 = 0;
};
TopTwo FindTopTwo(std::span<const float> logits);

// Little-endian float32 bytes (what the float rows' logits chain hashes and the DB keeps) as
// floats on this host; a trailing partial value is dropped.
std::vector<float> FloatsFromLittleEndian(std::span<const uint8_t> bytes);

}  // namespace dv::float_contrast
