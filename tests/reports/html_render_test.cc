// The HTML report as a browser shows it: headless Chromium loads the file with the network off,
// its DOM must hold the run table and the divergence table, and it must paint a screenshot.
// Skipped (visibly) where `chromium` is not installed; CI installs it
// (scripts/install_deps.sh --with-browser).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::Detverify;
using fleet_testing::ReadFile;
using fleet_testing::RunProgram;
using fleet_testing::ScratchDir;

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::filesystem::path candidate =
        std::filesystem::path(dirs.substr(start, end - start)) / name;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

class HtmlRender : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindOnPath("chromium");
    if (chromium_.empty())
      GTEST_SKIP() << "chromium is not on PATH (scripts/install_deps.sh --with-browser)";
    const std::string db = fleet_testing::WriteDemoDb(dir_.File("demo.db"));
    const auto r = Detverify({"report", db, "--format", "html", "-o", dir_.File("report.html")});
    ASSERT_EQ(r.code, 0) << r.err;
  }

  fleet_testing::CommandResult Chromium(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"--headless",     "--no-sandbox",
                                     "--disable-gpu",  "--disable-background-networking",
                                     "--no-first-run", "--user-data-dir=" + dir_.File("profile")};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("file://" + dir_.File("report.html"));
    return RunProgram(chromium_, args);
  }

  ScratchDir dir_{"html"};
  std::string chromium_;
};

TEST_F(HtmlRender, DomHoldsTheRunTableAndTheDivergence) {
  const auto r = Chromium({"--dump-dom"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string& dom = r.out;
  EXPECT_NE(dom.find("<table class=\"runs\">"), std::string::npos);
  for (const char* configuration : {"int8-cpu-b1", "int8-cpu-b8", "int8-ref-split", "int8-cuda-b1",
                                    "fp32-cpu-b1", "bf16-cpu-b8", "fp16-cuda-b1"}) {
    EXPECT_NE(dom.find(std::string("<td>") + configuration + "</td>"), std::string::npos)
        << configuration;
  }
  EXPECT_NE(dom.find("1 unique hash"), std::string::npos);
  EXPECT_NE(dom.find("<td>step 17</td><td>agree</td>"), std::string::npos);
  EXPECT_NE(dom.find("<td>step 3</td><td>leave at step 9</td>"), std::string::npos);
  EXPECT_NE(dom.find("<svg class=\"chart\""), std::string::npos);
  EXPECT_NE(dom.find("Testbox A"), std::string::npos);
}

TEST_F(HtmlRender, PaintsAScreenshot) {
  const std::string png = dir_.File("report.png");
  const auto r = Chromium({"--screenshot=" + png, "--window-size=1280,2000", "--hide-scrollbars"});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(std::filesystem::exists(png)) << r.err;
  const std::string bytes = ReadFile(png);
  ASSERT_GT(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // IHDR: width and height as big-endian 32-bit integers at bytes 16..23.
  auto be32 = [&](size_t at) {
    return (static_cast<uint32_t>(static_cast<unsigned char>(bytes[at])) << 24) |
           (static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 2])) << 8) |
           static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 3]));
  };
  EXPECT_EQ(be32(16), 1280u);
  EXPECT_EQ(be32(20), 2000u);
  // A blank page compresses to a few kilobytes; the report's text and chart do not.
  EXPECT_GT(bytes.size(), 40000u);
  if (const char* keep = std::getenv("DETVERIFY_KEEP_SCREENSHOT"))
    std::filesystem::copy_file(png, keep, std::filesystem::copy_options::overwrite_existing);
}

}  // namespace
}  // namespace dv
