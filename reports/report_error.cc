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

ReportError::ReportError(const std::string& message) : ExpectedError(OneLine(message)) {}

}  // namespace dv::reports
