// What several processes do to one result DB: a writer killed at random moments leaves only
// complete runs; two writers at once both succeed (db/run_store.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "db/run_store.h"
#include "tests/db/test_fixtures.h"

namespace dv::db {
namespace {

using testing::IncompleteRuns;
using testing::MakeRun;
using testing::RawSql;

// Body of a forked child: never returns into the test framework.
template <typename Work>
[[noreturn]] void RunChild(Work work) {
  try {
    work();
    std::_Exit(0);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "child %d: %s\n", static_cast<int>(::getpid()), error.what());
    std::_Exit(1);
  }
}

// Every run of `path` (with steps) has exactly n_steps steps and the id of its content.
void ExpectOnlyCompleteRuns(const std::string& path) {
  EXPECT_EQ(RawSql(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(IncompleteRuns(path), "0");
  const RunStore store = RunStore::OpenReadOnly(path);
  for (const ScenarioRecord& scenario : store.Scenarios()) {
    for (const RunRecord& run : store.Runs(scenario.id, StepLoading::kWithSteps)) {
      EXPECT_EQ(static_cast<int64_t>(run.steps.size()), run.n_steps) << run.id;
      EXPECT_EQ(ComputeRunId(run), run.id);
    }
  }
}

TEST(DbProcessSafety, KilledWriterLeavesOnlyCompleteRuns) {
  testing::ScratchDir dir("kill");
  const std::string path = dir.File("results.db");
  { RunStore::Open(path); }
  std::mt19937 random(20250131);  // fixed seed: the same "random" moments on every run
  std::uniform_int_distribution<int> delay_ms(30, 300);
  int64_t previous_runs = 0;
  for (int round = 0; round < 6; ++round) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      RunChild([&] {
        RunStore store = RunStore::Open(path);
        for (int i = 0;; ++i) {
          store.RecordRun(
              MakeRun("round-" + std::to_string(round) + "-run-" + std::to_string(i), 512));
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the writer stopped by itself (status " << status << ")";

    ExpectOnlyCompleteRuns(path);
    const int64_t runs = std::stoll(RawSql(path, "SELECT count(*) FROM runs"));
    EXPECT_GE(runs, previous_runs);
    previous_runs = runs;
  }
  EXPECT_GT(previous_runs, 0) << "no writer got as far as one run";
  RunStore store = RunStore::Open(path);  // still writable after all the kills
  EXPECT_NO_THROW(store.RecordRun(MakeRun("after-the-kills", 512)));
}

TEST(DbProcessSafety, TwoConcurrentWritersBothSucceed) {
  testing::ScratchDir dir("concurrent");
  const std::string path = dir.File("shared.db");  // created by whichever child comes first
  constexpr int kRunsPerWriter = 40;
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  pid_t writers[2];
  for (int w = 0; w < 2; ++w) {
    writers[w] = ::fork();
    ASSERT_GE(writers[w], 0);
    if (writers[w] == 0) {
      RunChild([&] {
        ::close(gate[1]);
        char ignored;
        // Blocks until the parent closes its end: both writers start together.
        while (::read(gate[0], &ignored, 1) > 0) {
        }
        RunStore store = RunStore::Open(path);
        for (int i = 0; i < kRunsPerWriter; ++i) {
          store.RecordRun(MakeRun("writer-" + std::to_string(w) + "-run-" + std::to_string(i), 64,
                                  "box-" + std::to_string(w)));
        }
      });
    }
  }
  ::close(gate[0]);
  ::close(gate[1]);
  for (const pid_t writer : writers) {
    int status = 0;
    ASSERT_EQ(::waitpid(writer, &status, 0), writer);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
  }
  const RunStore store = RunStore::OpenReadOnly(path);
  ASSERT_EQ(store.Scenarios().size(), 1u);
  EXPECT_EQ(store.Runs(store.Scenarios()[0].id).size(), 2u * kRunsPerWriter);
  EXPECT_EQ(store.Machines().size(), 2u);
  ExpectOnlyCompleteRuns(path);
}

TEST(DbProcessSafety, ProcessesCreatingOneNewFileTogetherAllSucceed) {
  // The first open of a file races on the journal-mode switch and on the migration; repeat the
  // race on fresh files so that an unlucky interleaving shows up here rather than in the field.
  testing::ScratchDir dir("create-race");
  constexpr int kProcesses = 4;
  for (int round = 0; round < 10; ++round) {
    const std::string path = dir.File("round-" + std::to_string(round) + ".db");
    int gate[2];
    ASSERT_EQ(::pipe(gate), 0);
    pid_t children[kProcesses];
    for (int p = 0; p < kProcesses; ++p) {
      children[p] = ::fork();
      ASSERT_GE(children[p], 0);
      if (children[p] == 0) {
        RunChild([&] {
          ::close(gate[1]);
          char ignored;
          while (::read(gate[0], &ignored, 1) > 0) {
          }
          RunStore::Open(path).RecordRun(MakeRun("process-" + std::to_string(p), 4));
        });
      }
    }
    ::close(gate[0]);
    ::close(gate[1]);
    for (const pid_t child : children) {
      int status = 0;
      ASSERT_EQ(::waitpid(child, &status, 0), child);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round;
    }
    EXPECT_EQ(RawSql(path, "SELECT count(*) FROM runs"), std::to_string(kProcesses));
  }
}

}  // namespace
}  // namespace dv::db
