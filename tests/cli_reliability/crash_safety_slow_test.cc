// `detverify run` killed at random moments (100 SIGKILLs, 33 SIGTERMs), on a scenario long enough
// that most kills land while a configuration child is working: the DB always opens, passes
// integrity_check and verification and holds only complete runs; no configuration child outlives
// the run (SIGKILL or SIGTERM); SIGTERM removes the child's files at once, and the next run
// removes those a SIGKILL left.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "db/run_store.h"
#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

pid_t SpawnRun(const std::vector<std::string>& args) {
  return fleet_testing::StartProgram(DETVERIFY_BIN, args, -1, -1, -1);
}

// Configuration children of run `run_pid`: processes whose command line holds "run-plan" and
// the run's plan file "detverify-<run_pid>-...".
int ChildrenOf(pid_t run_pid) {
  const std::string plan = "/detverify-" + std::to_string(run_pid) + "-";
  int found = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const std::string cmdline = text.str();
    if (cmdline.find("run-plan") != std::string::npos && cmdline.find(plan) != std::string::npos) {
      std::ifstream stat(entry.path() / "stat");
      std::string pid, comm, state;
      stat >> pid >> comm >> state;
      found += state != "Z" ? 1 : 0;
    }
  }
  return found;
}

// Waits up to `limit` for the children of run `run_pid` to be gone; returns how many remain.
int ChildrenAfter(pid_t run_pid, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  int left = ChildrenOf(run_pid);
  while (left > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    left = ChildrenOf(run_pid);
  }
  return left;
}

// Files a child of run `pid` keeps in the temp folder.
int ChildFilesOf(pid_t pid) {
  int found = 0;
  const std::string prefix = "detverify-" + std::to_string(pid) + "-";
  for (const fs::directory_entry& entry : fs::directory_iterator(fs::temp_directory_path())) {
    found += entry.path().filename().string().starts_with(prefix) ? 1 : 0;
  }
  return found;
}

TEST(CrashSafety, RunKilledAtRandomMomentsLeavesOnlyCompleteRunsAndNoChildren) {
  fleet_testing::ScratchDir dir("crash-safety");
  // quick.yaml's int8 rows with 160 new tokens: a run takes long enough to be killed inside it.
  const std::string scenario = dir.File("long-quick.yaml");
  {
    std::ifstream in(fleet_testing::SourceDir() + "/scenarios/quick.yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    const std::string from = "max_new: 32";
    yaml.replace(yaml.find(from), from.size(), "max_new: 160");
    std::ofstream(scenario) << yaml << "timeout_s: 300\n";
  }
  const std::string db = dir.File("results.db");

  // Three full runs first: the first caches the synthetic model (when no earlier test did), the
  // other two measure what the killed runs will take. The kill moments are drawn from the first
  // 60% of the faster of the two: a run's length varies with the machine's load (ctest runs other
  // tests beside this one), and moments drawn from a slow measurement would land after most of
  // the faster runs had ended.
  int status = 0;
  int64_t full_run_us = INT64_MAX;
  for (int run = 0; run < 3; ++run) {
    const auto t0 = Clock::now();
    const pid_t full = SpawnRun({"run", scenario, "--db", db});
    ASSERT_EQ(::waitpid(full, &status, 0), full);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    const int64_t us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
    if (run > 0) full_run_us = std::min(full_run_us, us);
  }
  std::printf("one full run: %.2f s (the faster of two)\n", static_cast<double>(full_run_us) / 1e6);

  constexpr int kTrials = 133;  // 100 SIGKILLs and 33 SIGTERMs
  std::mt19937 random(17);      // fixed seed: the same moments on every run of the test
  std::uniform_int_distribution<int64_t> moment_us(0, full_run_us * 6 / 10);
  int killed_mid_run = 0;
  std::vector<pid_t> killed;
  for (int trial = 0; trial < kTrials; ++trial) {
    const bool term = trial % 4 == 3;  // every fourth a SIGTERM, the rest SIGKILL
    const pid_t pid = SpawnRun({"run", scenario, "--db", db});
    std::this_thread::sleep_for(std::chrono::microseconds(moment_us(random)));
    ::kill(pid, term ? SIGTERM : SIGKILL);
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) ++killed_mid_run;
    killed.push_back(pid);
    EXPECT_EQ(ChildrenAfter(pid, std::chrono::milliseconds(500)), 0)
        << "trial " << trial << ": a configuration child outlived its run";
    if (term) {
      EXPECT_EQ(ChildFilesOf(pid), 0) << "trial " << trial << ": SIGTERM left files";
    }
    EXPECT_NO_THROW(db::VerifyDatabase(db)) << "trial " << trial;
  }
  std::printf("%d of %d kills landed mid-run\n", killed_mid_run, kTrials);
  EXPECT_GE(killed_mid_run, kTrials * 3 / 4);

  // The DB takes new runs, and the next run removes what the SIGKILLed children left behind.
  const pid_t last = SpawnRun({"run", scenario, "--db", db});
  ASSERT_EQ(::waitpid(last, &status, 0), last);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  for (const pid_t pid : killed) EXPECT_EQ(ChildFilesOf(pid), 0) << "files of run " << pid;
  const db::VerifySummary summary = db::VerifyDatabase(db);
  EXPECT_GE(summary.runs, 24);  // the three full runs' and the last run's 8 rows at least
}

}  // namespace
}  // namespace dv
