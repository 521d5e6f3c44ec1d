// DV_CHECK: the channel for broken invariants. A failed check is a bug in detverify, never a bad
// input (those are ExpectedError, base/expected_error.h): it prints one line to stderr with the
// file, the line, the condition and the values streamed into it, then aborts.
//
//   DV_CHECK(k >= 0 && k <= 62) << "k=" << k;
//   DV_CHECK(rows.size() == 1) << "a trace needs exactly one row, got " << rows.size();
//
// The message takes integers, booleans, characters and strings only, so the check is usable in
// the float-free integer core (the float-leak guard scans this header and check.cc). Nothing is
// formatted unless the check fails.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dv::internal {

// Collects a failed check's message and aborts when destroyed (at the end of the DV_CHECK
// statement). Not for direct use.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) noexcept;
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  [[noreturn]] ~CheckFailure();

  CheckFailure& operator<<(std::string_view text) noexcept;
  CheckFailure& operator<<(const char* text) noexcept {
    return *this << std::string_view(text != nullptr ? text : "(null)");
  }
  CheckFailure& operator<<(const std::string& text) noexcept {
    return *this << std::string_view(text);
  }
  CheckFailure& operator<<(char c) noexcept { return *this << std::string_view(&c, 1); }
  CheckFailure& operator<<(bool b) noexcept { return *this << (b ? "true" : "false"); }
  template <std::signed_integral T>
  CheckFailure& operator<<(T v) noexcept {
    AppendSigned(static_cast<int64_t>(v));
    return *this;
  }
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>) CheckFailure& operator<<(T v) noexcept {
    AppendUnsigned(static_cast<uint64_t>(v));
    return *this;
  }

 private:
  void Separate() noexcept;  // ": " before the first streamed value
  void Append(std::string_view text) noexcept;
  void AppendDigits(uint64_t v) noexcept;
  void AppendSigned(int64_t v) noexcept;
  void AppendUnsigned(uint64_t v) noexcept;

  // A fixed buffer: the failure path allocates nothing (it may be reached out of memory).
  static constexpr size_t kCapacity = 1024;
  char text_[kCapacity];
  size_t size_ = 0;
  bool values_started_ = false;
};

}  // namespace dv::internal

// The dangling-else form lets the values be streamed after the macro; the branch is predicted
// taken, so a passing check costs one compare.
#define DV_CHECK(condition)                 \
  if (__builtin_expect(!!(condition), 1)) { \
  } else                                    \
    ::dv::internal::CheckFailure(__FILE__, __LINE__, #condition)
