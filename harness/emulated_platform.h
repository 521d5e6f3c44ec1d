// Emulated rows: a configuration with `platform: aarch64 | s390x` runs that architecture's
// cross-built detverify-engine (scripts/cross_test.sh builds it) under qemu-user. The parent
// resolves the prompt and draws the co-prompts; the child generates, hashes, and reports its own
// fingerprint (arch, byte order, emulated: true), which is recorded as the run's machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/config_runner.h"
#include "harness/scenario.h"

namespace dv::harness {

// The environment variable naming the platform's detverify-engine: DETVERIFY_CROSS_BIN_AARCH64,
// DETVERIFY_CROSS_BIN_S390X.
std::string CrossBinaryVariable(const std::string& platform);

// Why an emulated configuration cannot run here, or "" when it can: qemu-<platform> is not on
// PATH, or the binary variable is unset or names no executable file. Such rows are skipped.
std::string EmulationSkipReason(const Configuration& config);

// The child's command line: qemu-<platform> (absolute path), the engine binary, then
// `generate --json --full-chains --fingerprint` with the model, --prompt-ids, the scenario's
// co-prompts as --co-prompt-ids, --position, --split, --max-new, --backend and --threads.
// Call only when EmulationSkipReason(config) is "".
std::vector<std::string> EmulatedCommand(const Scenario& scenario, const Configuration& config,
                                         const ResolvedModel& model,
                                         const std::vector<int32_t>& prompt);

struct EmulatedOutcome {
  ConfigOutcome outcome;       // our row's steps, generation time and wrap events
  nlohmann::json fingerprint;  // the child's
};

// Reads the child's `generate --json` document (our row at config.batch.position). Throws
// std::runtime_error when it is malformed, lacks full chains or a fingerprint, or names another
// artifact than `artifact_sha256` (the parent's).
EmulatedOutcome ParseEmulatedOutput(const std::string& text, const Configuration& config,
                                    const std::string& artifact_sha256);

}  // namespace dv::harness
