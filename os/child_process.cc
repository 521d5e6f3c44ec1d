#include "os/child_process.h"

#include <sys/wait.h>

#include <boost/process.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

namespace dv::os {
namespace {

namespace bp = boost::process;

std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  const std::string prefix = "detverify: ";
  if (last.rfind(prefix, 0) == 0) last = last.substr(prefix.size());
  return last.substr(0, 300);
}

}  // namespace

ChildExit RunChildProcess(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& extra_env,
                          std::chrono::seconds timeout, const std::string& stderr_path,
                          const std::function<void(const std::string&)>& on_line) {
  const std::vector<std::string> args(argv.begin() + 1, argv.end());
  bp::environment env = boost::this_process::environment();
  for (const auto& [key, value] : extra_env) env[key] = value;
  bp::ipstream child_out;
  bp::child child(argv.front(), bp::args(args), env, bp::std_out > child_out,
                  bp::std_err > stderr_path, bp::std_in < bp::null);
  std::thread reader([&] {
    std::string line;
    while (std::getline(child_out, line)) on_line(line);
  });
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  while (child.running()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      child.terminate();  // SIGKILL
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  child.wait();
  reader.join();
  ChildExit out;
  const int raw = child.native_exit_code();
  if (timed_out) {
    out.how = ChildExit::How::kTimedOut;
  } else if (WIFSIGNALED(raw)) {
    out.how = ChildExit::How::kSignaled;
    out.signal = WTERMSIG(raw);
  } else {
    out.how = ChildExit::How::kExited;
    out.exit_code = WIFEXITED(raw) ? WEXITSTATUS(raw) : raw;
  }
  out.stderr_last = LastLine(stderr_path);
  std::error_code ignored;
  std::filesystem::remove(stderr_path, ignored);
  return out;
}

}  // namespace dv::os
