// Emulated rows: a configuration with `platform: aarch64 | s390x` runs that architecture's
// cross-built detverify-engine (scripts/cross_test.sh builds it) under qemu-user. It gets the
// same run plan and answers through the same result protocol as a native child
// (plan/plan_result.h); its fingerprint (arch, byte order, emulated: true) becomes the run's
// machine.
#pragma once

#include <string>
#include <vector>

namespace dv::harness {

// The environment variable naming the platform's detverify-engine: DETVERIFY_CROSS_BIN_AARCH64,
// DETVERIFY_CROSS_BIN_S390X.
std::string CrossBinaryVariable(const std::string& platform);

// Why a row of `platform` cannot run here, or "" when it can: qemu-<platform> is not on PATH, or
// the binary variable is unset or names no executable file. Such rows are skipped.
std::string EmulationSkipReason(const std::string& platform);

// The start of the child's command line: qemu-<platform> (absolute path) and the engine binary.
// Call only when EmulationSkipReason(platform) is "".
std::vector<std::string> EmulatorCommand(const std::string& platform);

}  // namespace dv::harness
