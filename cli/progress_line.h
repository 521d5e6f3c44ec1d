// A progress display for long verbs (prepare, compare, ppl): on a terminal one status line
// rewritten in place -- phase, done/total, percent, elapsed, ETA -- at most 10 times a second;
// otherwise (a log, a pipe) one line when a phase starts and when it ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace dv::cli {

class ProgressLine {
 public:
  explicit ProgressLine(std::FILE* out, bool enabled = true);
  ~ProgressLine();
  // `done` of `total` units of `phase` finished (a new phase name starts a new line).
  void Update(const std::string& phase, int64_t done, int64_t total);
  // Ends the current line (if any) and prints `line` on its own (nothing when disabled: notes
  // are part of the progress display; warnings go to stderr directly).
  void Note(const std::string& line);
  void Finish();

 private:
  std::FILE* out_;
  bool enabled_, tty_;
  std::string phase_;
  std::chrono::steady_clock::time_point phase_start_, last_draw_;
  bool open_ = false;
};

// "1h02m", "3m05s", "12.3s".
std::string FormatDuration(double seconds);

}  // namespace dv::cli
