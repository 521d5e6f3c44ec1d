// The one verdict of a scenario's runs. `detverify run`'s table, the Markdown and HTML reports,
// the gate (with or without --expect) and the signed attestation all read it, so one question
// gets one answer wherever it is asked.
//
// The rule (docs/ci.md): the int8 rows of a scenario agree when at least one produced hashes,
// every int8 row that produced hashes ends on the same final logits chain and token chain, none
// crashed, timed out, was killed or failed (it produced no hash, so it cannot show agreement),
// and all used one artifact. Skipped rows (a backend or emulator this machine lacks) are listed
// and never fail; float rows are contrast, reported and never judged: their statistics
// (float_contrast/) are measured here so every reader shows the same numbers. A row leaves the
// baseline at the first step whose chain differs (divergence.h). Published hashes -- the
// scenario's own `expect` list -- are checked at the step they name and reported; they fail the
// verdict only when given as expectations (the gate's --expect).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/records.h"
#include "float_contrast/float_contrast.h"
#include "verdict/divergence.h"
#include "verdict/expected_hashes.h"

namespace dv::verdict {

enum class RowOutcome {
  kAgrees,    // int8 with hashes on the agreed chains (or on the baseline's, when rows disagree)
  kDiverges,  // int8 with hashes that leave the baseline's chains
  kNoHash,    // int8 that crashed, timed out, was killed or failed, or is ok without steps
  kSkipped,   // int8 that could not run here: listed, never failing
  kContrast,  // a float row: reported, never judged
};

// A row's chains against expectations for its artifact, each at the step it names: every one
// matched; at least one did not; or the row is too short to reach the step one names.
enum class HashMatch { kNone, kMatch, kMismatch, kTooShort };

struct RowVerdict {
  RowOutcome outcome = RowOutcome::kAgrees;
  // Against the baseline run, for every run with steps except the baseline.
  std::optional<ChainDivergence> divergence;
  HashMatch published = HashMatch::kNone;  // the scenario's own published hashes
  HashMatch expected = HashMatch::kNone;   // the expectations given (the gate's --expect)
  bool failed = false;  // this row fails the verdict (diverges, no hash, misses an expectation)
  std::string message;  // one line: why it fails or why it is not judged; "" for a passing row
};

struct ScenarioVerdict {
  std::vector<RowVerdict> rows;        // one per run, in run order
  std::vector<std::string> row_names;  // RowNames(runs)
  std::optional<size_t> baseline;      // FindBaselineRun(runs)
  int64_t int8_with_hashes = 0;
  int64_t int8_unique_logits = 0, int8_unique_tokens = 0;  // over those rows' final chains
  std::string logits_chain, token_chain;  // the agreed final chains (when exactly one each)
  std::vector<std::string> artifacts;     // distinct artifacts of the int8 rows with hashes
  int64_t float_with_hashes = 0, float_unique_logits = 0;
  // The float rows with hashes, measured against each other (never judged): token agreement,
  // the first step their tokens and logits part, the step-0 cushion. `float_rows` are their
  // indices into the runs; the cushion's row indices are indices into `float_rows`.
  float_contrast::FloatContrast floats;
  std::vector<size_t> float_rows;
  int64_t float_checkpoints = 0;  // distinct models of those rows (1 when they are comparable)
  int64_t steps = 0;              // the most steps of any run
  bool published_known = false;   // some published entry names an artifact of these runs
  bool published_ok = true;       // no int8 row mismatches the published hashes
  bool expectations_given = false;
  std::vector<std::string> problems;  // failures of the scenario as a whole, one line each
  std::vector<std::string> notes;     // what is reported but does not fail
  bool agree = false;                 // the int8 rows agree (the rule above)
  bool passed = false;                // agree, and every expectation given is met

  bool Disagrees() const { return int8_unique_logits > 1 || int8_unique_tokens > 1; }
  size_t failures() const;  // rows with failed set
};

// Row names unique within a scenario: the configuration; "configuration @ <cpu> <machine id>"
// when several machines ran it; " (run <id>)" appended when one machine ran it twice.
std::vector<std::string> RowNames(const std::vector<db::RunRecord>& runs);

// Judges `runs` (one scenario's, any machines, steps loaded) against the scenario's `published`
// hashes and, when `expectations` is not null, against those (a gate's --expect entries for this
// scenario; an empty list means none of them is for this scenario).
ScenarioVerdict JudgeScenario(const std::vector<db::RunRecord>& runs,
                              const std::vector<ExpectedHashes>& published,
                              const std::vector<ExpectedHashes>* expectations = nullptr);

// `hex` cut to `digits` digits ("" stays "").
std::string ShortHash(const std::string& hex, size_t digits = 12);

}  // namespace dv::verdict
