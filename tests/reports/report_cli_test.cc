// `detverify report` through the binary: Markdown and HTML to a file or stdout, --scenario, and
// one-line errors with exit code 2 that leave no output file behind.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::Detverify;
using fleet_testing::LineCount;
using fleet_testing::ReadFile;
using fleet_testing::ScratchDir;

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override { db_ = fleet_testing::WriteDemoDb(dir_.File("demo.db")); }
  ScratchDir dir_{"report-cli"};
  std::string db_;
};

TEST_F(ReportCli, MarkdownToStdoutAndFileAreTheSame) {
  const auto to_stdout = Detverify({"report", db_, "--format", "md"});
  ASSERT_EQ(to_stdout.code, 0) << to_stdout.err;
  const auto to_file = Detverify({"report", db_, "--format", "md", "-o", dir_.File("r.md")});
  ASSERT_EQ(to_file.code, 0) << to_file.err;
  EXPECT_EQ(ReadFile(dir_.File("r.md")), to_stdout.out);
  EXPECT_NE(to_stdout.out.find("## Scenario `demo`"), std::string::npos);
  EXPECT_NE(to_stdout.out.find("| step 17 | agree |"), std::string::npos);
}

TEST_F(ReportCli, HtmlIsWrittenWhole) {
  const auto r = Detverify({"report", db_, "--format", "html", "-o", dir_.File("r.html")});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = ReadFile(dir_.File("r.html"));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>\n"), std::string::npos);
  for (const auto& e : std::filesystem::directory_iterator(dir_.Path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos)
        << "temporary file left: " << e.path();
  }
}

TEST_F(ReportCli, ScenarioSelectsAndUnknownScenarioIsRefused) {
  const auto ok = Detverify({"report", db_, "--scenario", "demo"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  const auto bad = Detverify({"report", db_, "--scenario", "nope", "-o", dir_.File("r.md")});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "detverify: " + db_ + ": no scenario 'nope' (known: demo)\n");
  EXPECT_FALSE(std::filesystem::exists(dir_.File("r.md")));
}

TEST_F(ReportCli, UnreadableDbIsOneLineAndExitTwo) {
  const auto missing = Detverify({"report", dir_.File("missing.db")});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(LineCount(missing.err), 1u) << missing.err;
  EXPECT_EQ(missing.err.rfind("detverify: " + dir_.File("missing.db") + ": ", 0), 0u)
      << missing.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.File("missing.db"))) << "a report never creates a DB";

  fleet_testing::WriteFile(dir_.File("garbage.db"), std::string(4096, 'x'));
  const auto garbage = Detverify({"report", dir_.File("garbage.db"), "-o", dir_.File("r.md")});
  EXPECT_EQ(garbage.code, 2);
  EXPECT_EQ(LineCount(garbage.err), 1u) << garbage.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.File("r.md")));

  const auto bad_format = Detverify({"report", db_, "--format", "pdf"});
  EXPECT_EQ(bad_format.code, 2);

  const auto bad_dir = Detverify({"report", db_, "-o", dir_.File("no/such/dir/r.md")});
  EXPECT_EQ(bad_dir.code, 2);
  EXPECT_EQ(LineCount(bad_dir.err), 1u) << bad_dir.err;
}

}  // namespace
}  // namespace dv
