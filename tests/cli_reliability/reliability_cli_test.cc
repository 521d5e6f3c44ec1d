// Through the binary: a DB whose records were altered is refused by report, gate, attest sign,
// merge and verify-db with exit 2 and one line naming the run (gate never passes it, attest
// never signs it); output that cannot be written (a full disk, a closed pipe) is exit 2 with one
// line, not a silent success.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::CommandResult;
using fleet_testing::Detverify;
using fleet_testing::LineCount;
using fleet_testing::ScratchDir;

using fleet_testing::RunSql;

std::string RunId(const std::string& path, const std::string& configuration) {
  const db::RunStore store = db::RunStore::OpenReadOnly(path);
  for (const db::RunRecord& run : store.Runs(store.Scenarios().at(0).id)) {
    if (run.configuration == configuration) return run.id;
  }
  return "";
}

// Runs the binary with its standard output on `stdout_fd` (stderr captured).
CommandResult DetverifyWithStdout(const std::vector<std::string>& args, int stdout_fd,
                                  const std::string& err_path) {
  const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const pid_t pid = fleet_testing::StartProgram(DETVERIFY_BIN, args, -1, stdout_fd, err);
  ::close(err);
  CommandResult r;
  r.code = fleet_testing::WaitProgram(pid);
  r.err = fleet_testing::ReadFile(err_path);
  return r;
}

class ReliabilityCli : public ::testing::Test {
 protected:
  void SetUp() override { db_ = fleet_testing::WriteDemoDb(dir_.File("results.db"), 8); }

  // Expects exit 2 with one stderr line naming the file, `run_id` and `fragment`.
  void ExpectRefused(const std::vector<std::string>& args, const std::string& run_id,
                     const std::string& fragment) {
    const CommandResult r = Detverify(args);
    EXPECT_EQ(r.code, 2) << args.front() << ": " << r.out << r.err;
    EXPECT_EQ(LineCount(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(db_), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("run " + run_id), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  }

  ScratchDir dir_{"reliability-cli"};
  std::string db_;
};

TEST_F(ReliabilityCli, RunWithFewerStepsThanDeclaredIsRefusedByEveryReader) {
  // The reported failure: gate said PASS on a run with 8 steps declared and 5 stored.
  ASSERT_EQ(Detverify({"gate", db_}).code, 0);
  const std::string id = RunId(db_, "int8-cpu-b8");
  RunSql(db_, "DELETE FROM steps WHERE run_id = '" + id + "' AND step >= 5");
  const std::string why = "n_steps 8 but 5 steps";
  ExpectRefused({"gate", db_}, id, why);
  ExpectRefused({"report", db_}, id, why);
  ExpectRefused({"verify-db", db_}, id, why);
  ExpectRefused({"merge", db_, "-o", dir_.File("fleet.db")}, id, why);
  EXPECT_FALSE(std::filesystem::exists(dir_.File("fleet.db")));
  ASSERT_EQ(Detverify({"attest", "keygen", "--out", dir_.File("box.key")}).code, 0);
  ExpectRefused(
      {"attest", "sign", db_, "--key", dir_.File("box.key"), "-o", dir_.File("statement.json")}, id,
      why);
  EXPECT_FALSE(std::filesystem::exists(dir_.File("statement.json")));
}

TEST_F(ReliabilityCli, EditedStatusAndContentAreRefused) {
  const std::string id = RunId(db_, "int8-ref-split");
  RunSql(db_, "UPDATE runs SET status = 'passed' WHERE id = '" + id + "'");
  ExpectRefused({"gate", db_}, id, "has status 'passed', not one of");
  RunSql(db_, "UPDATE runs SET status = 'ok', wall_ms = 1 WHERE id = '" + id + "'");
  ExpectRefused({"gate", db_}, id, "does not match its content");
}

TEST_F(ReliabilityCli, VerifyDbPassesWhatRunsWrote) {
  const CommandResult r = Detverify({"verify-db", db_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(db_ + ": ok (integrity_check ok; 7 runs, 40 steps"), std::string::npos)
      << r.out;
}

TEST_F(ReliabilityCli, FullDiskOnStandardOutputIsAnError) {
  const int full = ::open("/dev/full", O_WRONLY);
  ASSERT_GE(full, 0);
  const CommandResult r = DetverifyWithStdout({"report", db_}, full, dir_.File("err"));
  ::close(full);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("standard output: write failed: No space left on device"), std::string::npos)
      << r.err;
}

TEST_F(ReliabilityCli, ClosedPipeOnStandardOutputIsAnError) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);  // nobody will ever read
  const CommandResult r = DetverifyWithStdout({"gate", db_}, fds[1], dir_.File("err"));
  ::close(fds[1]);
  EXPECT_EQ(r.code, 2) << "status " << r.code << ": " << r.err;
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("standard output: write failed: Broken pipe"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dv
