#include "cli/progress_line.h"

#include <unistd.h>

namespace dv::cli {

std::string FormatDuration(double s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  } else {
    const auto total = static_cast<long long>(s + 0.5);
    if (total >= 3600) {
      std::snprintf(buf, sizeof buf, "%lldh%02lldm", total / 3600, (total / 60) % 60);
    } else {
      std::snprintf(buf, sizeof buf, "%lldm%02llds", total / 60, total % 60);
    }
  }
  return buf;
}

ProgressLine::ProgressLine(std::FILE* out, bool enabled)
    : out_(out), enabled_(enabled), tty_(::isatty(::fileno(out)) == 1) {}

ProgressLine::~ProgressLine() { Finish(); }

void ProgressLine::Update(const std::string& phase, int64_t done, int64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (phase != phase_) {
    Finish();
    phase_ = phase;
    phase_start_ = now;
    last_draw_ = {};
    if (!tty_) {
      std::fprintf(out_, "detverify: %s ...\n", phase.c_str());
      std::fflush(out_);
    }
  }
  const double elapsed = std::chrono::duration<double>(now - phase_start_).count();
  if (!tty_) {
    if (done >= total && total > 0) {
      std::fprintf(out_, "detverify: %s done in %s\n", phase.c_str(),
                   FormatDuration(elapsed).c_str());
      std::fflush(out_);
      phase_.clear();
    }
    return;
  }
  if (done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
  std::string eta = "";
  if (done > 0 && done < total) {
    eta = "  ETA " + FormatDuration(elapsed / frac - elapsed);
  }
  constexpr int kWidth = 24;
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(filled), '=');
  bar.resize(kWidth, ' ');
  std::fprintf(out_, "\r\033[K%s [%s] %lld/%lld %3d%%  %s%s", phase.c_str(), bar.c_str(),
               static_cast<long long>(done), static_cast<long long>(total),
               static_cast<int>(frac * 100.0), FormatDuration(elapsed).c_str(), eta.c_str());
  std::fflush(out_);
  open_ = true;
}

void ProgressLine::Note(const std::string& line) {
  if (!enabled_) return;
  if (tty_ && open_) {
    std::fprintf(out_, "\n");
    open_ = false;
  }
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void ProgressLine::Finish() {
  if (tty_ && open_) {
    std::fprintf(out_, "\n");
    std::fflush(out_);
  }
  open_ = false;
}

}  // namespace dv::cli
