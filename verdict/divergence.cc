#include "verdict/divergence.h"

#include <algorithm>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dv::verdict {
namespace {

// reference first (the definition of correct), then cpu, then the rest in their order.
int BackendRank(BackendKind backend) { return static_cast<int>(backend); }

}  // namespace

ChainDivergence CompareChains(const std::vector<db::StepRecord>& baseline,
                              const std::vector<db::StepRecord>& other) {
  ChainDivergence d;
  const size_t n = std::min(baseline.size(), other.size());
  d.compared_steps = static_cast<int64_t>(n);
  for (size_t i = 0; i < n && (!d.logits_step || !d.token_step); ++i) {
    if (!d.logits_step && baseline[i].logits_chain != other[i].logits_chain) {
      d.logits_step = static_cast<int64_t>(i);
    }
    if (!d.token_step && baseline[i].token_chain != other[i].token_chain) {
      d.token_step = static_cast<int64_t>(i);
    }
  }
  if (baseline.size() != other.size()) {
    if (!d.logits_step) d.logits_step = d.compared_steps;
    if (!d.token_step) d.token_step = d.compared_steps;
  }
  return d;
}

bool IsBatchOneRun(const db::RunRecord& run) {
  const nlohmann::json config = nlohmann::json::parse(run.config_json, nullptr, false);
  if (!config.is_object()) return false;
  const auto batch = config.find("batch");
  const auto split = config.find("split_prefill");
  if (batch == config.end() || !batch->is_object() || split == config.end() ||
      !split->is_number_integer()) {
    return false;
  }
  const auto size = batch->find("size");
  return size != batch->end() && size->is_number_integer() && size->get<int64_t>() == 1 &&
         split->get<int64_t>() == 0;
}

std::optional<size_t> FindBaselineRun(const std::vector<db::RunRecord>& runs) {
  std::optional<size_t> best;
  auto rank = [&](size_t i) {
    return std::make_pair(IsBatchOneRun(runs[i]) ? 0 : 1, BackendRank(runs[i].backend));
  };
  for (size_t i = 0; i < runs.size(); ++i) {
    const db::RunRecord& r = runs[i];
    if (r.engine != EngineKind::kInt8 || r.status != RunStatus::kOk || r.n_steps == 0) continue;
    if (!best || rank(i) < rank(*best)) best = i;
  }
  return best;
}

}  // namespace dv::verdict
