// What several processes do to one result DB: a writer killed at random moments leaves only
// complete runs; two writers at once both succeed (db/run_store.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

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

// Waits for `child` and expects a clean exit.
void ExpectExitsCleanly(pid_t child, const std::string& what) {
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << what << ": status " << status;
}

// A pipe the children block on until the parent closes it, so that they start together.
class StartGate {
 public:
  StartGate() { EXPECT_EQ(::pipe(fds_), 0); }
  void Wait() {  // in a child
    ::close(fds_[1]);
    char ignored;
    while (::read(fds_[0], &ignored, 1) > 0) {
    }
  }
  void Open() {  // in the parent
    ::close(fds_[0]);
    ::close(fds_[1]);
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(DbProcessSafety, MergeIntoADbThatIsBeingWrittenLosesNothing) {
  // The reported failure: `merge other.db -o X.db` while `run --db X.db` records corrupted X.db
  // (the merge renamed a new file over the one the writer had open).
  testing::ScratchDir dir("merge-while-writing");
  const std::string live = dir.File("live.db");
  { RunStore::Open(live).RecordRun(MakeRun("before", 16)); }
  constexpr int kInputs = 6;
  std::vector<std::string> inputs;
  for (int i = 0; i < kInputs; ++i) {
    inputs.push_back(dir.File("other-" + std::to_string(i) + ".db"));
    RunStore::Open(inputs.back()).RecordRun(MakeRun("other-" + std::to_string(i), 64, "box-o"));
  }
  constexpr int kWriterRuns = 60;
  StartGate gate;
  const pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    RunChild([&] {
      gate.Wait();
      RunStore store = RunStore::Open(live);
      for (int i = 0; i < kWriterRuns; ++i) store.RecordRun(MakeRun("w-" + std::to_string(i), 64));
    });
  }
  gate.Open();
  for (const std::string& input : inputs) MergeDatabases({input}, live);
  ExpectExitsCleanly(writer, "writer");
  ExpectOnlyCompleteRuns(live);
  EXPECT_EQ(RawSql(live, "SELECT count(*) FROM runs"), std::to_string(1 + kInputs + kWriterRuns));
}

TEST(DbProcessSafety, ConcurrentMergesIntoOneNewOutputBothLand) {
  // The reported failure: two merges into a new -o both exited 0 and the result held one input.
  testing::ScratchDir dir("concurrent-merges");
  const std::string a = dir.File("a.db");
  const std::string b = dir.File("b.db");
  RunStore::Open(a).RecordRun(MakeRun("from-a", 32, "box-a"));
  RunStore::Open(b).RecordRun(MakeRun("from-b", 32, "box-b"));
  for (int round = 0; round < 8; ++round) {
    const std::string out = dir.File("fleet-" + std::to_string(round) + ".db");
    StartGate gate;
    pid_t mergers[2];
    for (int m = 0; m < 2; ++m) {
      mergers[m] = ::fork();
      ASSERT_GE(mergers[m], 0);
      if (mergers[m] == 0) {
        RunChild([&] {
          gate.Wait();
          MergeDatabases({m == 0 ? a : b}, out);
        });
      }
    }
    gate.Open();
    for (const pid_t merger : mergers) ExpectExitsCleanly(merger, "merger");
    EXPECT_EQ(RawSql(out, "SELECT count(*) FROM runs"), "2") << "round " << round;
    ExpectOnlyCompleteRuns(out);
  }
}

TEST(DbProcessSafety, ReadersLeaveNoCompanionFilesAndNeedNoWritableFolder) {
  testing::ScratchDir dir("read-only-folder");
  const std::filesystem::path folder = dir.File("shelf");
  std::filesystem::create_directory(folder);
  const std::string path = (folder / "results.db").string();
  { RunStore::Open(path).RecordRun(MakeRun("int8-cpu-b1", 8)); }
  const auto companions = [&] {
    return std::filesystem::exists(path + "-wal") || std::filesystem::exists(path + "-shm");
  };
  EXPECT_FALSE(companions()) << "the last writer left companion files";
  {
    const RunStore store = RunStore::OpenReadOnly(path);
    EXPECT_EQ(store.Scenarios().size(), 1u);
  }
  EXPECT_FALSE(companions()) << "a reader left companion files";

  // A folder the reader cannot write: as root permissions do not bind, so the reading child
  // drops to an unprivileged user first.
  std::filesystem::permissions(
      folder, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                  std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
                  std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  std::filesystem::permissions(dir.File(""), std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  const pid_t reader = ::fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    RunChild([&] {
      if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
        throw std::runtime_error("cannot drop to an unprivileged user");
      }
      const RunStore store = RunStore::OpenReadOnly(path);
      if (store.Runs(store.Scenarios().at(0).id, StepLoading::kWithSteps).size() != 1) {
        throw std::runtime_error("wrong run count");
      }
      if (ContentDigest(path).size() != 64) throw std::runtime_error("no digest");
    });
  }
  ExpectExitsCleanly(reader, "reader in a read-only folder");
  std::filesystem::permissions(folder, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add);
  EXPECT_FALSE(companions());
}

TEST(DbProcessSafety, WalFileAtRestIsReadWithoutCompanions) {
  // A DB left in WAL mode with no log (an older build's file): read as immutable.
  testing::ScratchDir dir("wal-at-rest");
  const std::string path = dir.File("results.db");
  { RunStore::Open(path).RecordRun(MakeRun("int8-cpu-b1", 8)); }
  RawSql(path, "PRAGMA journal_mode = WAL");
  ASSERT_FALSE(std::filesystem::exists(path + "-wal"));
  {
    const RunStore store = RunStore::OpenReadOnly(path);
    EXPECT_EQ(store.Scenarios().size(), 1u);
  }
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
}

TEST(DbProcessSafety, KilledMergeLeavesTheOutputWholeOrUnchanged) {
  // SIGKILL of a merge at random moments, into a new output and into an existing one: the output
  // is absent or complete (a new one), or holds its old runs or old + new (an existing one), and
  // always passes integrity_check and verification.
  testing::ScratchDir dir("kill-merge");
  const std::string input = dir.File("input.db");
  {
    RunStore store = RunStore::Open(input);
    for (int i = 0; i < 40; ++i) store.RecordRun(MakeRun("in-" + std::to_string(i), 64, "box-i"));
  }
  const std::string existing = dir.File("existing.db");
  { RunStore::Open(existing).RecordRun(MakeRun("old", 64)); }
  // The kill moments are drawn from the time one merge takes on this machine and build (the
  // slowest of three unkilled merges into a new output): a fixed window would land after most
  // merges had finished on a fast build, and the test would prove nothing about mid-merge kills.
  int64_t merge_us = 0;
  for (int i = 0; i < 3; ++i) {
    const std::string out = dir.File("timed-" + std::to_string(i) + ".db");
    const auto t0 = std::chrono::steady_clock::now();
    MergeDatabases({input}, out);
    merge_us = std::max<int64_t>(merge_us, std::chrono::duration_cast<std::chrono::microseconds>(
                                               std::chrono::steady_clock::now() - t0)
                                               .count());
  }
  std::printf("one merge: %.1f ms\n", static_cast<double>(merge_us) / 1e3);
  std::mt19937 random(20260131);
  std::uniform_int_distribution<int64_t> delay_us(0, merge_us * 8 / 10);
  int mid_merge = 0;
  constexpr int kTrials = 100;
  for (int trial = 0; trial < kTrials; ++trial) {
    const bool into_new = trial % 2 == 0;
    const std::string out = into_new ? dir.File("new-" + std::to_string(trial) + ".db") : existing;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) RunChild([&] { MergeDatabases({input}, out); });
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    mid_merge += WIFSIGNALED(status) ? 1 : 0;
    if (!std::filesystem::exists(out)) {
      EXPECT_TRUE(into_new);
      continue;
    }
    EXPECT_EQ(RawSql(out, "PRAGMA integrity_check"), "ok") << "trial " << trial;
    EXPECT_NO_THROW(VerifyDatabase(out)) << "trial " << trial;
    const std::string runs = RawSql(out, "SELECT count(*) FROM runs");
    if (into_new) {
      EXPECT_EQ(runs, "40") << "trial " << trial << ": a partial new output";
    } else {
      EXPECT_TRUE(runs == "1" || runs == "41") << "trial " << trial << ": " << runs << " runs";
      if (runs == "41") {  // start the next trial from the old content again
        RawSql(out,
               "DELETE FROM steps WHERE run_id IN (SELECT id FROM runs WHERE "
               "configuration LIKE 'in-%'); DELETE FROM runs WHERE configuration LIKE 'in-%';"
               "DELETE FROM machines WHERE id NOT IN (SELECT machine_id FROM runs)");
      }
    }
  }
  std::printf("%d of %d merges killed before they finished\n", mid_merge, kTrials);
  EXPECT_GE(mid_merge, kTrials / 2) << "most kills should land during the merge";
  // The next merge removes what the killed ones left in the folder.
  MergeDatabases({input}, existing);
  for (const auto& entry : std::filesystem::directory_iterator(dir.File(""))) {
    EXPECT_FALSE(entry.path().filename().string().starts_with("existing.db.merge-"))
        << entry.path();
  }
}

TEST(DbProcessSafety, KilledCreatorLeavesNoFileOrAWholeOne) {
  // SIGKILL of a process creating a new DB, at moments drawn from the time one creation takes:
  // the file is absent or opens with its schema (a reader never meets a DB without one), and the
  // next creation removes the staged files the killed ones left.
  testing::ScratchDir dir("kill-create");
  int64_t create_us = 0;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    { RunStore::Open(dir.File("timed-" + std::to_string(i) + ".db")); }
    create_us = std::max<int64_t>(create_us, std::chrono::duration_cast<std::chrono::microseconds>(
                                                 std::chrono::steady_clock::now() - t0)
                                                 .count());
  }
  std::printf("one creation: %.1f ms\n", static_cast<double>(create_us) / 1e3);
  std::mt19937 random(20261203);
  std::uniform_int_distribution<int64_t> delay_us(0, create_us);
  int killed = 0;
  constexpr int kTrials = 60;
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::string path = dir.File("new-" + std::to_string(trial) + ".db");
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) RunChild([&] { RunStore::Open(path); });
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    killed += WIFSIGNALED(status) ? 1 : 0;
    if (!std::filesystem::exists(path)) continue;
    EXPECT_NO_THROW(RunStore::OpenReadOnly(path)) << "trial " << trial;
    EXPECT_EQ(RawSql(path, "PRAGMA integrity_check"), "ok") << "trial " << trial;
  }
  std::printf("%d of %d creations killed before they finished\n", killed, kTrials);
  EXPECT_GE(killed, kTrials / 4) << "many kills should land during the creation";
  for (int trial = 0; trial < kTrials; ++trial) {
    RunStore::Open(dir.File("new-" + std::to_string(trial) + ".db"));
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir.File(""))) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".create-"), std::string::npos) << name;
  }
}

TEST(DbProcessSafety, ANewDbBesideAnOrphanedLogIsRefused) {
  // A -wal without its database would be replayed onto the new file.
  testing::ScratchDir dir("orphaned-log");
  const std::string path = dir.File("results.db");
  {
    std::FILE* log = std::fopen((path + "-wal").c_str(), "w");
    ASSERT_NE(log, nullptr);
    std::fputs("left over", log);
    std::fclose(log);
  }
  try {
    RunStore::Open(path);
    FAIL() << "opened";
  } catch (const DbError& error) {
    EXPECT_NE(std::string(error.what()).find(path + "-wal exists without its database"),
              std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(DbProcessSafety, FourWritersAndAMergeWhileAReaderReads) {
  testing::ScratchDir dir("writers-merge-reader");
  const std::string path = dir.File("shared.db");
  { RunStore::Open(path); }
  constexpr int kWriters = 4;
  constexpr int kRunsPerWriter = 25;
  constexpr int kMergeInputs = 5;
  std::vector<std::string> inputs;
  for (int i = 0; i < kMergeInputs; ++i) {
    inputs.push_back(dir.File("in-" + std::to_string(i) + ".db"));
    RunStore store = RunStore::Open(inputs.back());
    for (int r = 0; r < 4; ++r) {
      store.RecordRun(
          MakeRun("merged-" + std::to_string(i) + "-" + std::to_string(r), 64, "box-m"));
    }
  }
  StartGate gate;
  std::vector<pid_t> workers;
  for (int w = 0; w < kWriters; ++w) {
    workers.push_back(::fork());
    ASSERT_GE(workers.back(), 0);
    if (workers.back() == 0) {
      RunChild([&] {
        gate.Wait();
        RunStore store = RunStore::Open(path);
        for (int i = 0; i < kRunsPerWriter; ++i) {
          store.RecordRun(MakeRun("w" + std::to_string(w) + "-" + std::to_string(i), 64,
                                  "box-" + std::to_string(w)));
        }
      });
    }
  }
  workers.push_back(::fork());
  ASSERT_GE(workers.back(), 0);
  if (workers.back() == 0) {
    RunChild([&] {
      gate.Wait();
      for (const std::string& input : inputs) MergeDatabases({input}, path);
    });
  }
  const pid_t reader = ::fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    RunChild([&] {
      gate.Wait();
      // Reads until the writers are done (the parent kills it then): every snapshot verifies.
      for (;;) {
        const RunStore store = RunStore::OpenReadOnly(path);
        for (const ScenarioRecord& scenario : store.Scenarios()) {
          store.Runs(scenario.id, StepLoading::kWithSteps);
        }
      }
    });
  }
  gate.Open();
  for (const pid_t worker : workers) ExpectExitsCleanly(worker, "writer or merge");
  int reader_status = 0;
  ASSERT_EQ(::waitpid(reader, &reader_status, WNOHANG), 0)
      << "the reader stopped early (status " << reader_status << ")";
  ::kill(reader, SIGKILL);
  ::waitpid(reader, &reader_status, 0);
  ExpectOnlyCompleteRuns(path);
  EXPECT_NO_THROW(VerifyDatabase(path));
  EXPECT_EQ(RawSql(path, "SELECT count(*) FROM runs"),
            std::to_string(kWriters * kRunsPerWriter + kMergeInputs * 4));
}

TEST(DbProcessSafety, ReaderRecoversATransactionAKilledWriterLeft) {
  // A writer killed inside a rollback-journal transaction leaves a hot journal: the first
  // reader must roll it back (the committed content, verified), not fail read-only.
  testing::ScratchDir dir("hot-journal");
  const std::string path = dir.File("results.db");
  {
    RunStore store = RunStore::Open(path);
    for (int i = 0; i < 20; ++i) store.RecordRun(MakeRun("run-" + std::to_string(i), 64));
  }
  const std::string digest = ContentDigest(path);
  const pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) std::_Exit(2);
    // A one-page cache spills the changed pages into the file before the commit.
    sqlite3_exec(db,
                 "PRAGMA journal_mode = DELETE; PRAGMA cache_size = 1; BEGIN IMMEDIATE; "
                 "UPDATE steps SET token_id = token_id + 1;",
                 nullptr, nullptr, nullptr);
    ::raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(writer, &status, 0), writer);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_GT(std::filesystem::file_size(path + "-journal"), 0u) << "no hot journal to recover";
  EXPECT_NO_THROW(VerifyDatabase(path));
  EXPECT_EQ(ContentDigest(path), digest);
}

}  // namespace
}  // namespace dv::db
