#include "db/db_error.h"

#include <algorithm>

namespace dv::db {
namespace {

// Paths, SQLite messages and record fields are interpolated into messages; keep them on one line
// so the CLI prints exactly one line per failure.
std::string OneLine(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return text;
}

}  // namespace

DbError::DbError(const std::string& message) : ExpectedError(OneLine(message)) {}

}  // namespace dv::db
