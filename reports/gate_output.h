// What `detverify gate` writes: the verdict as terminal text, JUnit XML (one testcase per run of
// a configuration, one testsuite per scenario) and a Markdown summary for a CI job page.
#pragma once

#include <cstddef>
#include <string>

#include "reports/gate.h"

namespace dv::reports {

// GitHub refuses a job summary over 1 MiB; the summary stays below this many bytes.
inline constexpr size_t kMaxSummaryBytes = 1000 * 1000;

// One line per scenario verdict, then its problems, failed rows (with the first divergent step)
// and notes, then the overall "gate: PASS" / "gate: FAIL".
std::string RenderGateText(const GateResult& gate);

// JUnit XML: <testsuites> with one <testsuite> per scenario and one <testcase> per run
// (classname "detverify.<scenario>", name the row's name); a failed row has <failure>, a skipped
// or float row <skipped>. Problems of a scenario as a whole become one more failed testcase
// named "<scenario> (scenario)"; problems of the DB one failed testcase in a "detverify" suite.
std::string RenderJunitXml(const GateResult& gate);

// Markdown for a CI job summary: the verdict, then per scenario a table of its rows. Never longer
// than `max_bytes`: past it, passing rows are left out first, then rows beyond the limit, with a
// note saying how many.
std::string RenderGateSummary(const GateResult& gate, size_t max_bytes = kMaxSummaryBytes);

}  // namespace dv::reports
