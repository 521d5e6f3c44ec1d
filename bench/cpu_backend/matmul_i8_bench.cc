// The cpu backend's int8 GEMM at Qwen3-0.6B shapes. Batch-1 decode is a pure weight stream:
// the "bytes_per_second" counter is the weight bandwidth it reaches, to be compared with
// `detverify bench`'s read bandwidth. Larger m (batched decode, prefill) report int8 MAC/s.
//   cpu_backend_bench --benchmark_filter=Matmul
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <vector>

#include "engine/backends/cpu_backend.h"
#include "engine/backends/matmul_i8_cpu.h"
#include "os/huge_pages.h"
#include "os/thread_pool.h"

namespace dv {
namespace {

// All seven weight matrices of one layer, as many layers as the model has, so that the working set
// (>= 64 MiB) never fits a cache: every call streams from memory as a decode step does.
void BM_MatmulI8Layers(benchmark::State& state) {
  const int64_t m = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const auto isa = static_cast<CpuIsa>(state.range(2));
  if (!CpuSupports(isa)) {
    state.SkipWithError("ISA level not supported here");
    return;
  }
  auto backend = MakeCpuBackend({threads, isa, true, std::nullopt, true});
  struct Shape {
    int64_t k, n;
  };
  const Shape layer[] = {{1024, 2048}, {1024, 1024}, {1024, 1024}, {2048, 1024},
                         {1024, 3072}, {1024, 3072}, {3072, 1024}};
  constexpr int kLayers = 28;  // the whole model: no cache can hold it
  std::vector<int8_t> source(3072 * 3072, 3);
  std::vector<std::unique_ptr<PackedWeight>> weights;
  int64_t bytes = 0, macs = 0;
  for (int l = 0; l < kLayers; ++l) {
    for (const Shape& s : layer) {
      weights.push_back(backend->PackWeight(source.data(), s.k, s.n));
      bytes += s.k * s.n;
      macs += m * s.k * s.n;
    }
  }
  std::vector<int8_t> a(static_cast<size_t>(m * 3072), 1);
  std::vector<int32_t> c(static_cast<size_t>(m * 3072));
  for (auto _ : state) {
    for (const auto& w : weights) backend->MatmulI8(a.data(), m, *w, c.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["MAC/s"] =
      benchmark::Counter(static_cast<double>(macs), benchmark::Counter::kIsIterationInvariantRate);
}

void MatmulArgs(benchmark::internal::Benchmark* b) {
  for (int isa : {0, 1, 2, 3, 4, 5}) {  // CpuIsa: scalar, neon, avx2, avx512vnni, neondot, amx
    for (int threads : {1, 2}) {
      for (int m : {1, 4, 8, 64}) b->Args({m, threads, isa});
    }
  }
  b->ArgNames({"m", "threads", "isa"})->UseRealTime();
}
BENCHMARK(BM_MatmulI8Layers)->Apply(MatmulArgs);

// The same bytes read without arithmetic (the bandwidth probe of `detverify bench`): the ceiling
// BM_MatmulI8Layers at m = 1 is measured against.
void BM_StreamRead(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  auto backend = MakeCpuBackend({threads, BestCpuIsa(), true, std::nullopt, true});
  int64_t bytes = 0;
  for (auto _ : state) {
    const ReadBandwidthSample s = backend->MeasureReadBandwidth(int64_t{256} << 20, 1, true);
    state.SetIterationTime(static_cast<double>(s.best_ns) * 1e-9);
    bytes += s.bytes;
  }
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_StreamRead)->Arg(1)->Arg(2)->ArgName("threads")->UseManualTime();

// One read pass over `mib` MiB (huge pages) with the widest kernel's loads, with or without its
// software prefetch `prefetch` bytes ahead: what the prefetch gains on a plain read, and how much
// of a buffer of a given size a large last-level cache serves (a buffer read again and again
// stays partly cached where the cache is hundreds of MiB).
void BM_StreamReadPrefetch(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t prefetch = state.range(1);
  const auto bytes = static_cast<size_t>(state.range(2)) << 20;
  const MatmulI8Kernel& kernel = MatmulI8KernelFor(BestCpuIsa());
  uint8_t* buffer = os::MapAligned(bytes, true);
  os::ThreadPool pool(threads);
  const int64_t blocks = static_cast<int64_t>(bytes >> 16);
  os::ParallelFor(pool, blocks, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b << 16; i < e << 16; ++i) buffer[i] = static_cast<uint8_t>(i * 131);
  });
  std::atomic<uint64_t> sink{0};
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    os::ParallelFor(pool, blocks, [&](int64_t b, int64_t e, int) {
      sink.fetch_add(kernel.stream_read(buffer + (b << 16), (e - b) << 16, prefetch),
                     std::memory_order_relaxed);
    });
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
  os::UnmapAligned(buffer, bytes);
}
BENCHMARK(BM_StreamReadPrefetch)
    ->ArgsProduct({{1, 2}, {0, 512, 2048}, {64, 512, 2048}})
    ->ArgNames({"threads", "prefetch", "mib"})
    ->UseManualTime();

// Why the weights are not read ahead during the row work (docs/NOTES.md, "Tried and dropped"):
// one thread asks for a cold 1 MiB piece of a 1 GiB buffer with `lines` prefetches (into L2)
// per 4 KiB page, works on nothing else for 200 us (a row loop's length), then reads the piece.
// issue_us is how long the asking itself held the thread (a prefetch waits for a free fill
// buffer like a load), read_us what the read then took; the manual time is their sum, the
// bytes/s the piece over it. lines 0 is the cold read alone.
void BM_ReadAheadWhileBusy(benchmark::State& state) {
  const int64_t lines = state.range(0);
  constexpr size_t kBuffer = size_t{1} << 30, kPiece = size_t{1} << 20, kPage = 4096;
  const MatmulI8Kernel& kernel = MatmulI8KernelFor(BestCpuIsa());
  uint8_t* buffer = os::MapAligned(kBuffer, true);
  for (size_t i = 0; i < kBuffer; i += 64) buffer[i] = static_cast<uint8_t>(i >> 6);
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  uint64_t sink = 0;
  size_t next = 0;
  double issue = 0, read = 0;
  for (auto _ : state) {
    const uint8_t* piece = buffer + next;
    next = (next + 7 * kPiece) % kBuffer;  // 7 MiB on: the piece is cold (the buffer > any cache)
    const auto t0 = Clock::now();
    for (size_t page = 0; page < kPiece; page += kPage) {
      for (int64_t l = 0; l < lines; ++l) __builtin_prefetch(piece + page + l * 64, 0, 2);
    }
    const auto t1 = Clock::now();
    while (seconds(t1, Clock::now()) < 200e-6) {
    }
    const auto t2 = Clock::now();
    sink += kernel.stream_read(piece, kPiece, 0);
    const auto t3 = Clock::now();
    issue += seconds(t0, t1);
    read += seconds(t2, t3);
    state.SetIterationTime(seconds(t0, t1) + seconds(t2, t3));
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kPiece));
  state.counters["issue_us"] = benchmark::Counter(issue * 1e6, benchmark::Counter::kAvgIterations);
  state.counters["read_us"] = benchmark::Counter(read * 1e6, benchmark::Counter::kAvgIterations);
  os::UnmapAligned(buffer, kBuffer);
}
BENCHMARK(BM_ReadAheadWhileBusy)
    ->Arg(0)
    ->Arg(1)
    ->Arg(4)
    ->Arg(64)
    ->ArgName("lines")
    ->UseManualTime();

}  // namespace
}  // namespace dv
