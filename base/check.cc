#include "base/check.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace dv::internal {
namespace {

// Writes all of `text` to stderr with write(2): no stdio buffer, no allocation, no locale.
void WriteStderr(const char* text, size_t size) noexcept {
  while (size > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, size);
    if (n <= 0) return;
    text += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

CheckFailure::CheckFailure(const char* file, int line, const char* condition) noexcept {
  Append("detverify: internal error: ");
  Append(file != nullptr ? file : "?");
  Append(":");
  AppendDigits(static_cast<uint64_t>(line > 0 ? line : 0));
  Append(": check failed: ");
  Append(condition != nullptr ? condition : "?");
}

void CheckFailure::Separate() noexcept {
  if (!values_started_) {
    values_started_ = true;
    Append(": ");
  }
}

void CheckFailure::Append(std::string_view text) noexcept {
  const size_t room = kCapacity - 1 - size_;  // one byte stays free for the newline
  const size_t n = text.size() < room ? text.size() : room;
  if (n > 0) std::memcpy(text_ + size_, text.data(), n);
  size_ += n;
}

void CheckFailure::AppendDigits(uint64_t v) noexcept {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  char out[24];
  for (size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  Append(std::string_view(out, n));
}

CheckFailure& CheckFailure::operator<<(std::string_view text) noexcept {
  Separate();
  Append(text);
  return *this;
}

void CheckFailure::AppendUnsigned(uint64_t v) noexcept {
  Separate();
  AppendDigits(v);
}

void CheckFailure::AppendSigned(int64_t v) noexcept {
  Separate();
  if (v < 0) {
    Append("-");
    AppendDigits(0 - static_cast<uint64_t>(v));  // -INT64_MIN does not fit int64
  } else {
    AppendDigits(static_cast<uint64_t>(v));
  }
}

CheckFailure::~CheckFailure() {
  text_[size_++] = '\n';
  WriteStderr(text_, size_);
  std::abort();
}

}  // namespace dv::internal
