#include "reports/report_error.h"

#include <algorithm>

namespace dv::reports {
namespace {

std::string OneLine(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return text;
}

}  // namespace

ReportError::ReportError(const std::string& message) : std::runtime_error(OneLine(message)) {}

}  // namespace dv::reports
