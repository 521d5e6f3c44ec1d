// Escaping for the three markups the reports write. Text from a DB (configuration names, status
// details, fingerprints) is data, never markup.
#pragma once

#include <string>
#include <string_view>

namespace dv::reports {

// For HTML and XML text and attribute values: & < > " ' become entities; control characters
// other than tab and newline (not allowed in XML 1.0) become U+FFFD.
std::string EscapeXml(std::string_view text);

// For one Markdown table cell: | and \ escaped, ` < > * _ [ ] escaped so a name cannot open
// markup, newlines become spaces.
std::string EscapeMarkdownCell(std::string_view text);

// Text inside a Markdown code span: backticks become ', newlines become spaces.
std::string MarkdownCode(std::string_view text);

}  // namespace dv::reports
