// Progress of a scenario run: a live status line on a terminal (configuration, step/total,
// tokens/s, ETA), plain log lines otherwise (start, every quarter, finish).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace dv::harness {

class Progress {
 public:
  explicit Progress(std::FILE* out);
  void Start(size_t index, size_t total, const std::string& config);
  void Step(int64_t done, int64_t total);
  void Finish(const std::string& status, int64_t steps, int64_t wall_ms);
  void Note(const std::string& line);  // a line that must not be overwritten

 private:
  std::FILE* out_;
  bool tty_;
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  int64_t last_quarter_ = 0;
  bool line_open_ = false;
};

}  // namespace dv::harness
