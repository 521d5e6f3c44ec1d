// `detverify report --format html`: the content of the Markdown report as one self-contained
// HTML file: inline CSS, an inline SVG chart per scenario, no script, nothing fetched.
#pragma once

#include <string>

#include "reports/fleet_results.h"

namespace dv::reports {

// The page (UTF-8). Deterministic: the same DB gives the same bytes.
std::string RenderHtmlReport(const FleetResults& fleet);

}  // namespace dv::reports
