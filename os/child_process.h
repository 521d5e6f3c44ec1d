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
ChildExit RunChildProcess(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& extra_env,
                          std::chrono::seconds timeout, const std::string& stderr_path,
                          const std::function<void(const std::string&)>& on_line);

}  // namespace dv::os
