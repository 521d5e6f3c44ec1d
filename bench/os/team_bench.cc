// The cost of one Team::For loop with nothing in its body, by item count and thread count: what
// every parallel loop of a forward pass pays on top of its work (a decode step of the 0.6B model
// runs about 340 of them, most of 8 to 192 items). Each member adds to its own cache line, so the
// body itself shares nothing.
//   os_bench --benchmark_filter=TeamLoop
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "os/thread_pool.h"

namespace dv::os {
namespace {

struct alignas(64) Counter {
  int64_t items = 0;
};

// range(0) items a loop, range(1) threads; 1,000 loops in one region per iteration.
void BM_TeamLoop(benchmark::State& state) {
  const int64_t items = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  constexpr int kLoops = 1000;
  ThreadPool pool(threads);
  Team team(threads, nullptr, 0);  // no idle reads
  std::vector<Counter> counters(static_cast<size_t>(threads));
  for (auto _ : state) {
    TeamRunner::Run(pool, team, [&](Team& t) {
      for (int i = 0; i < kLoops; ++i) {
        t.For(items, [&](int64_t begin, int64_t end, int member) {
          counters[static_cast<size_t>(member)].items += end - begin;
          benchmark::ClobberMemory();
        });
      }
    });
  }
  int64_t total = 0;
  for (const Counter& c : counters) total += c.items;
  benchmark::DoNotOptimize(total);
  state.SetItemsProcessed(state.iterations() * kLoops);  // items/s: loops a second
}
BENCHMARK(BM_TeamLoop)
    ->ArgsProduct({{2, 8, 64, 192}, {2}})
    ->ArgNames({"items", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dv::os
