// One child process with a time limit: its stdout read line by line (each line handed to the
// caller as it arrives), its stderr kept in a file, and how it ended. Boost.Process, so the same
// code spawns on Linux and macOS.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dv::os {

struct ChildExit {
  enum class How { kExited, kSignaled, kTimedOut };
  How how = How::kExited;
  int exit_code = 0;        // kExited
  int signal = 0;           // kSignaled
  std::string stderr_last;  // the last non-empty stderr line, without a "detverify: " prefix
};

// Runs argv[0] with argv[1..] (stdin from /dev/null), the current environment plus `extra_env`,
// calling `on_line` with each stdout line; a child still running after `timeout` is killed
// (SIGKILL) and reported as timed out. `stderr_path` receives its stderr and is removed after.
// The child never outlives this process: on Linux the kernel kills it when its parent dies
// (PR_SET_PDEATHSIG, even after a SIGKILL of the parent), and after
// KillChildOnTerminationSignals a SIGTERM, SIGINT or SIGHUP kills it first. One child at a time.
ChildExit RunChildProcess(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& extra_env,
                          std::chrono::seconds timeout, const std::string& stderr_path,
                          const std::function<void(const std::string&)>& on_line);

// Installs handlers for SIGTERM, SIGINT and SIGHUP that kill the running child (if any), remove
// the files registered with RemoveOnTerminationSignal, and let this process die of the signal.
void KillChildOnTerminationSignals();

// Files the termination handler removes (a child's plan, result and stderr files, and the
// "<file>.tmp.<child pid>" a child writing one atomically leaves); at most 8 at once, paths under
// 4096 bytes (others are not registered). Forget them once removed normally.
void RemoveOnTerminationSignal(const std::string& path);
void ForgetOnTerminationSignal(const std::string& path);

// True while process `pid` exists (kill(pid, 0) succeeds or is refused for permission).
bool ProcessExists(long pid);

}  // namespace dv::os
