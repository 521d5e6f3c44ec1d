// The child side of a run: executes one RunPlan on this machine (native) or under qemu-user
// (emulated, detverify-engine) and reports through the one result protocol (plan_result.h).
// Nothing here reads a scenario or a tokenizer: the plan says everything.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "plan/plan_result.h"
#include "plan/run_plan.h"

namespace dv::plan {

// progress(step_done, total) after each step of our row.
using ProgressFn = std::function<void(int64_t, int64_t)>;

// Runs `plan`: loads its model (the artifact folder, or the synthetic preset, from the cache or
// synthesized), refuses it unless its SHA-256s are the plan's, builds the batch from the plan's
// ids, generates greedily on exactly the plan's backend, SIMD level and thread count, and
// returns our row's chains with this machine's fingerprint. `plan_sha256` is the digest of the
// plan text the caller read. Throws PlanError (another model, another spec version, an engine
// this build lacks), ArtifactError, BackendError, GenerationError.
PlanResult ExecutePlan(const RunPlan& plan, const std::string& plan_sha256,
                       const ProgressFn& progress);

// `run-plan PLAN --result RESULT`: reads PLAN (a regular file, bounded), executes it with
// "progress <done> <total>" lines on stdout, and writes the result to RESULT atomically. Returns
// the process exit code (0); expected failures are thrown to the caller's main.
// Test-only fault injection: DETVERIFY_FAULT=crash:<config>,hang:<config>,... makes that
// configuration abort or hang at its second step.
int RunPlanChild(const std::string& plan_path, const std::string& result_path);

}  // namespace dv::plan
