#include "reports/markup_escape.h"

namespace dv::reports {

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (c < 0x20 && ch != '\t' && ch != '\n') {
          out += "\xEF\xBF\xBD";
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string EscapeMarkdownCell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '|':
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '<':
      case '>':
        out += '\\';
        out += ch;
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string MarkdownCode(std::string_view text) {
  std::string out = "`";
  for (const char ch : text) {
    if (ch == '`') {
      out += '\'';
    } else if (ch == '\n' || ch == '\r') {
      out += ' ';
    } else if (ch == '|') {
      out += "\\|";  // inside a table a bare pipe would end the cell, even in a code span
    } else {
      out += ch;
    }
  }
  return out + "`";
}

}  // namespace dv::reports
