// The frame of both binaries (cli/app_main.cc): an ExpectedError exits with its own code and one
// line, anything else is an internal error (exit 3), never mistaken for a bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <new>
#include <stdexcept>
#include <utility>

#include "base/expected_error.h"
#include "cli/command.h"

namespace dv::cli {
namespace {

// Runs a one-verb app whose verb throws what `thrower` throws; returns (exit code, stderr).
std::pair<int, std::string> RunThrowing(const std::function<void()>& thrower) {
  CLI::App app{"test"};
  ConfigureApp(app);
  CommandContext ctx;
  app.add_subcommand("verb", "")->callback([&] {
    thrower();
    ctx.exit_code = kExitOk;
  });
  char arg0[] = "detverify";
  char arg1[] = "verb";
  char* argv[] = {arg0, arg1, nullptr};
  ::testing::internal::CaptureStderr();
  const int code = RunApp(app, ctx, 2, argv);
  return {code, ::testing::internal::GetCapturedStderr()};
}

TEST(RunApp, ExpectedErrorsExitWithTheirCode) {
  auto [code, err] = RunThrowing([] { throw FileError("x.yaml: a FIFO, not a regular file"); });
  EXPECT_EQ(code, kExitError);
  EXPECT_EQ(err, "detverify: x.yaml: a FIFO, not a regular file\n");
  std::tie(code, err) = RunThrowing([] { throw ExpectedError("signature\nbad", kExitVerdict); });
  EXPECT_EQ(code, kExitVerdict);
  EXPECT_EQ(err, "detverify: signature bad\n") << "one line";
  std::tie(code, err) = RunThrowing([] { throw UsageError("give --artifact DIR"); });
  EXPECT_EQ(code, kExitError);
}

TEST(RunApp, AnythingElseIsAnInternalError) {
  auto [code, err] = RunThrowing([] { throw std::logic_error("index 9 of 3"); });
  EXPECT_EQ(code, kExitInternal);
  EXPECT_EQ(err, "detverify: internal error: index 9 of 3 (please report this)\n");
  std::tie(code, err) = RunThrowing([] { throw std::invalid_argument("looks like input"); });
  EXPECT_EQ(code, kExitInternal) << "only ExpectedError is an expected failure";
  std::tie(code, err) = RunThrowing([] { throw std::bad_alloc(); });
  EXPECT_EQ(code, kExitInternal);
  EXPECT_EQ(err, "detverify: internal error: out of memory\n");
  std::tie(code, err) = RunThrowing([] { throw 42; });
  EXPECT_EQ(code, kExitInternal);
}

TEST(RunApp, UsageErrorsOfTheParserAreOneLine) {
  CLI::App app{"test"};
  ConfigureApp(app);
  CommandContext ctx;
  app.add_subcommand("verb", "");
  char arg0[] = "detverify";
  char arg1[] = "nosuchverb";
  char* argv[] = {arg0, arg1, nullptr};
  ::testing::internal::CaptureStderr();
  const int code = RunApp(app, ctx, 2, argv);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitError);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace
}  // namespace dv::cli
