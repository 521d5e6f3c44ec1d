// The one result protocol of a run's child, native or emulated: `run-plan PLAN --result FILE`
// writes this JSON document to FILE (atomically) and prints "progress <done> <total>" lines on
// stdout while it works. The parent reads it only from a child that exited 0, and checks that it
// answers the plan it was given (plan_sha256) with the model the plan names (model_sha256).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected_error.h"
#include "plan/run_plan.h"

namespace dv::plan {

inline constexpr int64_t kResultProtocol = 1;

// A result that does not answer its plan. "<problem>" (the parent says which child).
class ResultError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

struct StepHashes {
  int32_t token = 0;
  std::string logits_chain, token_chain;  // 64 lowercase hex each
};

struct PlanResult {
  std::string plan_sha256;     // SHA-256 of the plan text the child read
  std::string model_sha256;    // the SHA-256 the child checked against the plan
  std::string isa;             // the SIMD level the cpu backend ran at ("" elsewhere)
  int64_t threads = 1;         // the backend's thread count
  int64_t generate_ms = 0;     // generation only, without model loading
  int64_t wrap_events = 0;     // SPEC §8 diagnostic count
  nlohmann::json fingerprint;  // the child's machine (fingerprint/fingerprint.h)
  std::vector<StepHashes> steps;
  // Float plans only: our row's step-0 logits as little-endian float32 bytes [vocab], the bytes
  // steps[0].logits_chain hashes (the float rows' cushion, verdict/). Empty for int8 plans.
  std::vector<uint8_t> step0_logits;
};

nlohmann::json ResultJson(const PlanResult& result);
// Parses `text` and checks it against `plan` (whose canonical text hashes to `plan_sha256`):
// protocol version, plan and model digests, one step per generated token with full 64-digit
// chains, a fingerprint object, and for a float plan (only) its step-0 logits, which must hash to
// the step-0 logits chain. Throws ResultError naming the first problem.
PlanResult ParseResult(std::string_view text, const RunPlan& plan, const std::string& plan_sha256);

}  // namespace dv::plan
