// The CI gate (docs/ci.md): each scenario's one verdict (verdict/verdict.h), judged with the
// --expect entries for it, as JUnit-shaped cases. A scenario passes when every int8
// configuration that ran produced the same final logits-chain and token-chain hashes, none of
// them crashed, timed out or failed (it produced no hash), all used one artifact, and, given an
// --expect file, every int8 row shows the expected hashes at the step each entry names. Skipped
// rows and float rows are reported but never fail it. A DB without scenarios fails: there is
// nothing to show agreement.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reports/fleet_results.h"
#include "verdict/expected_hashes.h"

namespace dv::reports {

// One entry of an --expect file: the hashes every int8 row of `scenario` run on an artifact
// whose SHA-256 starts with hashes.artifact must show after hashes.steps steps.
struct ExpectEntry {
  std::string scenario;            // the scenario's name; "" applies to every scenario
  verdict::ExpectedHashes hashes;  // artifact prefix, steps, logits and tokens prefixes
};

// Parses an --expect document (docs/ci.md): one object
//   {"scenario": "quick", "artifact": "<sha256 prefix>", "steps": 32,
//    "logits": "<chain prefix>", "tokens": "<chain prefix>"}
// or an array of them. "scenario" is optional; prefixes are 8 to 64 hex digits (case is
// ignored); "steps" >= 1; other keys are errors. Throws ReportError "<source>: <problem>".
std::vector<ExpectEntry> ParseExpect(const std::string& text, const std::string& source);
// ParseExpect of a file's content; an unreadable file throws ReportError "<path>: <problem>".
std::vector<ExpectEntry> LoadExpectFile(const std::string& path);

enum class CaseOutcome { kPass, kFail, kSkipped };

// One run of one configuration: a JUnit testcase.
struct GateCase {
  std::string name;  // ScenarioResults::row_names
  std::string configuration, device, engine, backend, status;
  std::string logits_chain, token_chain;  // final chains ("" when none)
  int64_t steps = 0;
  CaseOutcome outcome = CaseOutcome::kPass;
  std::string message;  // why it failed or was skipped; "" for a pass
};

struct ScenarioGate {
  std::string label;
  bool passed = false;
  std::vector<std::string> problems;  // failures of the scenario as a whole, one line each
  std::vector<GateCase> cases;        // one per run, in run order
  int64_t int8_ok = 0;                // int8 runs that produced hashes
  int64_t unique_logits = 0, unique_tokens = 0;  // over those runs' final chains
  int64_t steps = 0;                             // the most steps of any run
  std::string logits_chain, token_chain;         // the agreed final chains (when exactly one each)
  std::string artifact;                          // the runs' artifact ("" when none or several)
  std::string baseline;                          // name of the row the others are compared with
  std::vector<std::string> notes;                // what was reported but did not fail the gate
  bool Disagrees() const { return unique_logits > 1 || unique_tokens > 1; }
};

struct GateResult {
  bool passed = false;
  std::string db_path;
  std::string results_digest;
  std::vector<ScenarioGate> scenarios;
  std::vector<std::string> problems;  // failures not tied to one scenario (empty DB, an --expect
                                      // entry for a scenario the DB does not hold)
  bool expect_given = false;
};

struct GateOptions {
  // nullptr: no --expect file. Entries naming a scenario that `fleet` does not hold fail the
  // gate unless `scenario_selected` (then they belong to scenarios left out on purpose).
  const std::vector<ExpectEntry>* expect = nullptr;
  bool scenario_selected = false;
};

GateResult EvaluateGate(const FleetResults& fleet, const GateOptions& options = {});

}  // namespace dv::reports
