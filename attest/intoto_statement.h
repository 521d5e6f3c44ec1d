// The in-toto v1 Statement that detverify signs: two subjects (the model artifact and the digest
// of the canonical run results) and a run-results predicate (schema in attest/README.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "build_info.h"

namespace dv::attest {

inline constexpr const char* kStatementType = "https://in-toto.io/Statement/v1";
// Project-owned predicate type; bump the trailing version on any schema change.
inline constexpr const char* kRunResultsPredicateType =
    "https://detverify.dev/attestation/run-results/v1";

struct SubjectDigest {
  std::string name;    // e.g. "model.safetensors", "results"
  std::string sha256;  // 64 lowercase hex digits
};

struct MachineEntry {
  std::string machine_id;      // dv::fingerprint::MachineId(fingerprint)
  nlohmann::json fingerprint;  // dv::fingerprint::CollectFingerprint() as recorded
};

struct ConfigurationHashes {
  std::string configuration;  // e.g. "int8-cpu-b1"
  std::string engine;         // "int8" | "float"
  std::string backend;        // "cpu" | "reference" | "cuda"
  std::string machine_id;
  std::string status;              // e.g. "ok", "skipped", "crashed", "timeout"
  std::string final_logits_chain;  // full hex digest after the last step
  std::string final_token_chain;   // full hex digest after the last step
  int64_t n_steps = 0;
};

struct Verdict {
  int64_t int8_unique_logits_hashes = 0;
  int64_t int8_unique_token_hashes = 0;
  bool agree = false;  // every int8 configuration produced the same chains
};

struct AttestationInput {
  SubjectDigest artifact;
  SubjectDigest results;  // the caller hashes its canonical results
  std::string scenario_name;
  std::string scenario_id;
  std::vector<MachineEntry> machines;
  std::vector<ConfigurationHashes> configurations;
  Verdict verdict;
  std::string tool_version = dv::build::kToolVersion;
  std::string spec_version = dv::build::kSpecVersion;
};

// The Statement for `input`. Machines are sorted by machine_id and configurations by
// (configuration, machine_id, engine, backend), so the same results always give the same
// Statement whatever order the caller collected them in. Throws AttestError on a malformed digest.
nlohmann::json BuildStatement(const AttestationInput& input);

// True when `statement` has the in-toto v1 shape verification requires: _type, a non-empty subject
// list whose entries carry digest.sha256 (64 lowercase hex), a non-empty predicateType and, if
// present, an object predicate. Otherwise false with the first problem in *why (may be null).
bool IsInTotoStatement(const nlohmann::json& statement, std::string* why);

// True when `statement` and `expected_statement` have the same _type, the same subjects (in any
// order), the same predicateType and an identical predicate. Otherwise false with a one-line
// description of the first difference (JSON pointer, found and expected values) in *why.
bool StatementMatches(const nlohmann::json& statement, const nlohmann::json& expected_statement,
                      std::string* why);

}  // namespace dv::attest
