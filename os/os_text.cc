#include "os/os_text.h"

#include <charconv>
#include <system_error>

namespace dv::os::internal {

std::string Trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out.push_back(byte >= 0x20 && byte < 0x7F ? c : '?');
  }
  return out;
}

namespace {

// A non-negative decimal of at most 15 digits (no overflow below), or -1.
int64_t ParseSmallDecimal(std::string_view text) {
  if (text.empty() || text.size() > 15) return -1;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return -1;
  return value;
}

}  // namespace

int64_t ParseCacheSize(std::string_view text) {
  const std::string t = Trim(text);
  if (t.empty()) return -1;
  int64_t unit = 1;
  std::string_view digits = t;
  if (t.back() == 'K' || t.back() == 'M' || t.back() == 'G') {
    unit = t.back() == 'K'   ? int64_t{1} << 10
           : t.back() == 'M' ? int64_t{1} << 20
                             : int64_t{1} << 30;
    digits.remove_suffix(1);
  }
  const int64_t value = ParseSmallDecimal(digits);
  return value < 0 || value > (int64_t{1} << 40) ? -1 : value * unit;
}

int64_t CountCpuList(std::string_view text) {
  const std::string t = Trim(text);
  if (t.empty()) return 0;
  int64_t count = 0;
  std::string_view rest = t;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t dash = item.find('-');
    const int64_t first = ParseSmallDecimal(item.substr(0, dash));
    const int64_t last =
        dash == std::string_view::npos ? first : ParseSmallDecimal(item.substr(dash + 1));
    if (first < 0 || last < first) return 0;
    count += last - first + 1;
    if (comma != std::string_view::npos && rest.empty()) return 0;  // a trailing comma
  }
  return count;
}

}  // namespace dv::os::internal
