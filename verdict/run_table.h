// The run table (DESIGN.md §1): one row per configuration run, its int8 / float chain hash at
// the last step, and the unique-hash verdict; ✅/❌ against published hashes when the artifact is
// the one they were published for. Shared by `run`, `report` and `gate`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "db/records.h"
#include "verdict/expected_hashes.h"

namespace dv::verdict {

struct TableRow {
  std::string device;         // from the machine's fingerprint
  std::string machine_id;
  std::string configuration;
  std::string engine, backend, status, status_detail;
  int64_t steps = 0;
  std::string logits_chain, token_chain;  // full final digests ("" when none)
  std::string expected;       // "ok" | "mismatch" | "" (no published hashes for this artifact)
};

struct RunTable {
  std::string scenario;
  std::string artifact_id, artifact_source;
  std::vector<TableRow> rows;
  int64_t int8_ok_runs = 0;
  int64_t int8_unique_logits = 0, int8_unique_tokens = 0;
  int64_t float_ok_runs = 0, float_unique_logits = 0;
  bool int8_agree = true;    // at most one unique int8 logits and token hash
  bool expected_ok = true;   // no row mismatches published hashes
};

RunTable BuildRunTable(const std::string& scenario_name, const std::vector<db::RunRecord>& runs,
                       const std::vector<ExpectedHashes>& expect);

// The text table; hashes shown with `hex_digits` digits (12 in tables).
std::string RenderRunTableText(const RunTable& table, size_t hex_digits = 12);
nlohmann::json RunTableJson(const RunTable& table);

}  // namespace dv::verdict
