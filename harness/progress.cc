#include "harness/progress.h"

#include <unistd.h>

namespace dv::harness {
namespace {

std::string Duration(double s) {
  const auto total = static_cast<long long>(s + 0.5);
  char buf[32];
  if (total >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", total / 3600, (total / 60) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", total / 60, total % 60);
  }
  return buf;
}

}  // namespace

Progress::Progress(std::FILE* out) : out_(out), tty_(::isatty(::fileno(out)) == 1) {}

void Progress::Start(size_t index, size_t total, const std::string& config) {
  label_ = "[" + std::to_string(index + 1) + "/" + std::to_string(total) + "] " + config;
  start_ = std::chrono::steady_clock::now();
  last_quarter_ = 0;
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s  starting", label_.c_str());
    line_open_ = true;
  } else {
    std::fprintf(out_, "%s: started\n", label_.c_str());
  }
  std::fflush(out_);
}

void Progress::Step(int64_t done, int64_t total) {
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
  if (tty_) {
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
    std::fprintf(out_, "\r\033[K%s  step %lld/%lld  %.1f tok/s  ETA %s", label_.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total), rate,
                 Duration(eta).c_str());
    line_open_ = true;
    std::fflush(out_);
  } else if (total > 0) {
    const int64_t quarter = done * 4 / total;
    if (quarter > last_quarter_ && done < total) {
      last_quarter_ = quarter;
      std::fprintf(out_, "%s: step %lld/%lld (%.1f tok/s)\n", label_.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total), rate);
      std::fflush(out_);
    }
  }
}

void Progress::Finish(const std::string& status, int64_t steps, int64_t wall_ms) {
  if (tty_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s: %s", label_.c_str(), status.c_str());
  if (steps > 0) {
    const double secs = static_cast<double>(wall_ms) / 1000.0;
    std::fprintf(out_, ", %lld steps in %s (%.1f tok/s)", static_cast<long long>(steps),
                 Duration(secs).c_str(), secs > 0 ? static_cast<double>(steps) / secs : 0.0);
  }
  std::fprintf(out_, "\n");
  line_open_ = false;
  std::fflush(out_);
}

void Progress::Note(const std::string& line) {
  if (tty_ && line_open_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", line.c_str());
  line_open_ = false;
  std::fflush(out_);
}

}  // namespace dv::harness
