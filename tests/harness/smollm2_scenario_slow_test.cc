// scenarios/smollm2.yaml as a user runs it, on the installed SmolLM2 (skipped, naming the path,
// without it; CI installs it): the GGUF is prepared into the run's cache, every int8 row (cpu and
// reference, batch 1 and 8, split prefill) ends on the scenario's pinned hash -- detverify's own
// result, recorded in docs/RESULTS.md -- and every float row runs. About 2.5 minutes on two cores
// (label slow).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gguf/model_cache.h"
#include "tests/support/scratch_files.h"
#include "tests/support/smollm2.h"

namespace dv {
namespace {

TEST(SmolLM2Scenario, EveryInt8RowEndsOnThePinnedHash) {
  DV_REQUIRE_SMOLLM2(model);
  test_files::ScratchDir dir("smollm2-scenario");
  const std::string out = dir.File("out.json"), err = dir.File("err.txt");
  const std::string command = std::string(DETVERIFY_BIN) + " run '" + DV_SOURCE_ROOT +
                              "/scenarios/smollm2.yaml' --json --db '" + dir.File("r.db") +
                              "' > '" + out + "' 2> '" + err + "' < /dev/null";
  const int raw = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(raw));
  ASSERT_EQ(WEXITSTATUS(raw), 0) << test_files::ReadFile(err);
  const nlohmann::json table = nlohmann::json::parse(test_files::ReadFile(out));
  EXPECT_EQ(table["verdict"]["int8_agree"], true);
  EXPECT_EQ(table["verdict"]["published_ok"], true);
  EXPECT_EQ(table["verdict"]["int8_runs"], 6);
  EXPECT_EQ(table["verdict"]["float_runs"], 4);
  for (const auto& row : table["rows"]) {
    EXPECT_EQ(row["status"], "ok") << row.dump();
    if (row["engine"] == "int8") {
      EXPECT_EQ(row["logits_chain"].get<std::string>().substr(0, 12), "25223aa615af") << row.dump();
    }
  }
}

}  // namespace
}  // namespace dv
