// Work split into contiguous ranges, one thread each: the one way prepare uses threads. Ranges
// only ever hold different outputs (rows, columns, heads), never parts of one sum, so the
// thread count changes no result.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace dv {

// fn(begin, end) over [0, items) in min(threads, items / min_per_thread) ranges (at least one),
// the first on the calling thread's pool of std::threads; returns when all are done.
template <typename Fn>
void ParallelRanges(int threads, int64_t items, int64_t min_per_thread, const Fn& fn) {
  const int64_t t = std::max<int64_t>(
      1, std::min<int64_t>(threads, items / std::max<int64_t>(1, min_per_thread)));
  if (t == 1) {
    fn(int64_t{0}, items);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t i = 0; i < t; ++i) pool.emplace_back(fn, items * i / t, items * (i + 1) / t);
  for (std::thread& th : pool) th.join();
}

}  // namespace dv
