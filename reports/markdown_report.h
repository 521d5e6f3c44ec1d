// `detverify report --format md`: the whole DB (or one scenario) as GitHub-flavoured Markdown.
#pragma once

#include <string>

#include "reports/fleet_results.h"

namespace dv::reports {

// A header (DB, results digest, artifacts, tool and spec versions), then per scenario: the run
// table across every machine with the unique-hash verdicts and the gate's verdict, why rows did
// not run, and where each float row (and each disagreeing int8 row) leaves the baseline's
// chains; then each machine's fingerprint. Deterministic: the same DB gives the same bytes.
std::string RenderMarkdownReport(const FleetResults& fleet);

}  // namespace dv::reports
