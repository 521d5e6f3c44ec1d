// The float engine's GEMM for a few rows against OpenBLAS on the same weights, at Qwen3-0.6B's
// MLP shapes (1024 x 3072 and 3072 x 1024, fp32). The weights (about 300 MB) are read from memory
// once per iteration, as in a decode step: "bytes_per_second" is the weight stream reached and
// "FLOP/s" the arithmetic rate (2 m k n per matrix). docs/RESULTS.md, "The float engine's
// small-batch GEMM", quotes this benchmark:
//   float_engine_bench --benchmark_filter=SmallGemm --benchmark_min_time=2
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/backends/cpu_weight_arena.h"
#include "float_engine/blas.h"
#include "float_engine/small_gemm.h"
#include "os/thread_pool.h"

namespace dv {
namespace {

constexpr int64_t kHidden = 1024, kIntermediate = 3072;
constexpr int kMatrices = 24;  // 24 x 12 MiB: far past any cache

// The weights in 2 MiB-aligned huge-page memory (the cpu backend's HugePageBuffer), as the
// float engine's own weight memory is, filled with small values so that no sum overflows or goes
// subnormal.
std::unique_ptr<HugePageBuffer> Weights(int64_t count) {
  auto buffer = std::make_unique<HugePageBuffer>(static_cast<size_t>(count) * sizeof(float));
  auto* w = reinterpret_cast<float*>(buffer->data());
  for (int64_t i = 0; i < count; ++i) w[i] = static_cast<float>((i * 7919) % 61 - 30) / 256.0f;
  return buffer;
}

// range(0) rows, range(1) threads, range(2) kernel: 0 OpenBLAS (MatmulXWt: sgemv at one row,
// sgemm above), 1 the small-batch GEMM with AVX2, 2 with AVX-512.
void BM_SmallGemm(benchmark::State& state) {
  const int64_t m = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const int kernel = static_cast<int>(state.range(2));
  const SmallGemmIsa isa = kernel == 2 ? SmallGemmIsa::kAvx512 : SmallGemmIsa::kAvx2;
  if (kernel != 0 && !SmallGemmIsaSupported(isa)) {
    state.SkipWithError("kernel not supported on this CPU");
    return;
  }
  const int64_t per_matrix = kHidden * kIntermediate;
  const auto weights = Weights(per_matrix * kMatrices);
  const auto* w0 = reinterpret_cast<const float*>(weights->data());
  std::vector<float> x(static_cast<size_t>(m * kIntermediate), 0.5f);
  std::vector<float> y(static_cast<size_t>(m * kIntermediate));
  os::ThreadPool pool(threads);
  SetBlasThreads(threads);
  for (auto _ : state) {
    for (int i = 0; i < kMatrices; ++i) {
      // Even matrices are up/gate-shaped (k 1024 -> n 3072), odd ones down-shaped (3072 -> 1024).
      const int64_t k = i % 2 == 0 ? kHidden : kIntermediate;
      const int64_t n = i % 2 == 0 ? kIntermediate : kHidden;
      const float* w = w0 + i * per_matrix;
      if (kernel == 0) {
        MatmulXWt(x.data(), k, m, k, w, n, y.data(), n);
      } else {
        SmallGemmXWt(isa, x.data(), k, m, k, w, n, y.data(), n, pool);
      }
    }
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(m * per_matrix) * kMatrices;
  state.SetBytesProcessed(state.iterations() * per_matrix * kMatrices *
                          static_cast<int64_t>(sizeof(float)));
  state.counters["FLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

void SmallGemmArgs(benchmark::internal::Benchmark* b) {
  for (int kernel : {0, 1, 2}) {
    for (int threads : {1, 2}) {
      for (int m : {1, 2, 4, 8, 16}) b->Args({m, threads, kernel});
    }
  }
  b->ArgNames({"m", "threads", "kernel"})->UseRealTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_SmallGemm)->Apply(SmallGemmArgs);

}  // namespace
}  // namespace dv
