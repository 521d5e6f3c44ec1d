#include "os/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <array>
#include <atomic>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <thread>

#include "base/expected_error.h"

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

// Set between fork and exec: the kernel sends the child SIGKILL when the parent thread that
// forked it dies. A parent already gone by then (the prctl came too late) is caught by getppid.
struct DieWithParent : bp::extend::handler {
  pid_t parent = ::getpid();
  template <typename Executor>
  void on_exec_setup(Executor&) const {
#if defined(__linux__)
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (::getppid() != parent) ::_exit(127);
  }
};

// What the signal handler touches, in plain static memory so that it calls only
// async-signal-safe functions (kill, unlink, signal, raise).
constexpr size_t kMaxFiles = 8;
constexpr size_t kMaxPath = 4096;
std::atomic<pid_t> g_child{0};
std::array<std::array<char, kMaxPath>, kMaxFiles> g_files{};
std::array<std::atomic<bool>, kMaxFiles> g_file_used{};

// `path` + ".tmp." + `pid` (the name WriteFileAtomic gives a file process `pid` was writing),
// built without allocating.
void UnlinkChildTemporary(const char* path, pid_t pid) {
  char name[kMaxPath + 32];
  size_t n = 0;
  while (path[n] != '\0' && n < kMaxPath) {
    name[n] = path[n];
    ++n;
  }
  for (const char c : {'.', 't', 'm', 'p', '.'}) name[n++] = c;
  char digits[16];
  size_t d = 0;
  for (auto v = static_cast<unsigned long>(pid); v > 0 || d == 0; v /= 10) {
    digits[d++] = static_cast<char>('0' + v % 10);
  }
  while (d > 0) name[n++] = digits[--d];
  name[n] = '\0';
  ::unlink(name);
}

void OnTerminationSignal(int sig) {
  const pid_t child = g_child.load();
  if (child > 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);  // dead before its files go: it cannot create one after
  }
  const pid_t self = ::getpid();
  for (size_t i = 0; i < kMaxFiles; ++i) {
    if (!g_file_used[i].load()) continue;
    ::unlink(g_files[i].data());
    if (child > 0) UnlinkChildTemporary(g_files[i].data(), child);
    UnlinkChildTemporary(g_files[i].data(), self);  // a file this process was writing
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Clears the child's pid however RunChildProcess ends.
struct ChildRegistration {
  explicit ChildRegistration(pid_t pid) { g_child.store(pid); }
  ~ChildRegistration() { g_child.store(0); }
  ChildRegistration(const ChildRegistration&) = delete;
  ChildRegistration& operator=(const ChildRegistration&) = delete;
};

}  // namespace

void KillChildOnTerminationSignals() {
  struct sigaction action {};
  action.sa_handler = OnTerminationSignal;
  sigemptyset(&action.sa_mask);
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &action, nullptr);
}

void RemoveOnTerminationSignal(const std::string& path) {
  if (path.size() >= kMaxPath) return;
  for (size_t i = 0; i < kMaxFiles; ++i) {
    if (g_file_used[i].load()) continue;
    std::snprintf(g_files[i].data(), kMaxPath, "%s", path.c_str());
    g_file_used[i].store(true);
    return;
  }
}

void ForgetOnTerminationSignal(const std::string& path) {
  for (size_t i = 0; i < kMaxFiles; ++i) {
    if (g_file_used[i].load() && path == g_files[i].data()) g_file_used[i].store(false);
  }
}

bool ProcessExists(long pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

ChildExit RunChildProcess(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& extra_env,
                          std::chrono::seconds timeout, const std::string& stderr_path,
                          const std::function<void(const std::string&)>& on_line) {
  const std::vector<std::string> args(argv.begin() + 1, argv.end());
  bp::environment env = boost::this_process::environment();
  for (const auto& [key, value] : extra_env) env[key] = value;
  bp::ipstream child_out;
  RemoveOnTerminationSignal(stderr_path);
  // No process or thread to be had (EAGAIN) is a condition of the machine: an expected failure,
  // never an abort. The child, once started, is killed by its destructor if the thread is not.
  std::optional<bp::child> started;
  try {
    started.emplace(argv.front(), bp::args(args), env, bp::std_out > child_out,
                    bp::std_err > stderr_path, bp::std_in < bp::null, DieWithParent{});
  } catch (const std::system_error& e) {
    ForgetOnTerminationSignal(stderr_path);
    throw ExpectedError(argv.front() + ": cannot start a child process: " + e.what());
  }
  bp::child& child = *started;
  const ChildRegistration registration(child.id());
  std::thread reader;
  try {
    reader = std::thread([&] {
      std::string line;
      while (std::getline(child_out, line)) on_line(line);
    });
  } catch (const std::system_error& e) {
    ForgetOnTerminationSignal(stderr_path);
    throw ExpectedError(argv.front() + ": cannot start a thread to read its output: " + e.what());
  }
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
  ForgetOnTerminationSignal(stderr_path);
  return out;
}

}  // namespace dv::os
