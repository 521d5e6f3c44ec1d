// DV_CHECK: a failed check prints one line with file, line, condition and the streamed values,
// then aborts; a passing one evaluates its values never.
#include "base/check.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace dv {
namespace {

int64_t Counted(int* calls) {
  ++*calls;
  return 7;
}

TEST(Check, PassingCheckEvaluatesNoValues) {
  int calls = 0;
  DV_CHECK(1 + 1 == 2) << "never built: " << Counted(&calls);
  EXPECT_EQ(calls, 0);
}

TEST(CheckDeathTest, FailureNamesFileLineConditionAndValues) {
  const int64_t k = -3;
  const uint64_t big = UINT64_MAX;
  EXPECT_DEATH(DV_CHECK(k >= 0 && k <= 62) << "k=" << k << " big=" << big << " " << true,
               "^detverify: internal error: .*check_test.cc:[0-9]+: check failed: k >= 0 && k "
               "<= 62: k=-3 big=18446744073709551615 true\n$");
}

TEST(CheckDeathTest, ExtremesAndNoValues) {
  EXPECT_DEATH(DV_CHECK(false) << INT64_MIN, "check failed: false: -9223372036854775808");
  EXPECT_DEATH(DV_CHECK(2 < 1), "check failed: 2 < 1\n");
  const std::string text = "a std::string";
  EXPECT_DEATH(DV_CHECK(text.empty()) << text << ' ' << 'x',
               "check failed: text.empty\\(\\): a "
               "std::string x");
}

// The message is cut, not overflowed, when the values are long.
TEST(CheckDeathTest, LongMessagesAreCut) {
  const std::string long_text(5000, 'z');
  EXPECT_DEATH(DV_CHECK(false) << long_text, "check failed: false: z+\n");
}

// A dangling else after DV_CHECK binds to the right if.
TEST(Check, DanglingElse) {
  bool reached = false;
  if (reached)
    DV_CHECK(true);
  else
    reached = true;
  EXPECT_TRUE(reached);
}

}  // namespace
}  // namespace dv
