// Where one run's hash chains leave another's: the first step whose logits chain differs, and
// the first whose token chain differs. A chain state covers every step before it, so once two
// chains differ they differ at every later step and the first differing index is the step where
// the runs' logits (or tokens) first differed.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "db/records.h"

namespace dv::verdict {

struct ChainDivergence {
  int64_t compared_steps = 0;          // min of the two runs' step counts
  std::optional<int64_t> logits_step;  // first step whose logits chain differs; when every
                                       // compared step agrees but the lengths differ, the
                                       // shorter length; nullopt when the chains are identical
  std::optional<int64_t> token_step;   // the same for the token chain
  bool Identical() const { return !logits_step && !token_step; }
};

// Compares `other` with `baseline` step by step (both ordered by step, starting at 0).
ChainDivergence CompareChains(const std::vector<db::StepRecord>& baseline,
                              const std::vector<db::StepRecord>& other);

// True for a run whose configuration is batch size 1 without a split prefill (read from its
// config_json; false when config_json does not say).
bool IsBatchOneRun(const db::RunRecord& run);

// The run other rows are compared with: among int8 runs with status "ok" and steps, the first
// batch-1 run (IsBatchOneRun), preferring the reference backend, then cpu, then cuda; failing
// that, the first such int8 run of any configuration. nullopt when there is none. Ties keep the
// order of `runs`.
std::optional<size_t> FindBaselineRun(const std::vector<db::RunRecord>& runs);

}  // namespace dv::verdict
