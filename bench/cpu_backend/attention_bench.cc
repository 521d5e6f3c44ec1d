// Grouped-query attention at long contexts as batch-8 decode runs it: one work item is a (row,
// KV head) with its query heads (two: the 0.6B model's group; one: a model without grouping, the
// single-query kernels), over K/V bytes that no cache holds, split over the backend's threads.
// "bytes_per_second" is the K/V bytes read: compare it with the GEMM's weight stream and the read
// probe (matmul_i8_bench.cc).
//   cpu_backend_bench --benchmark_filter=AttendGroupStream
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "engine/backends/attention_i8_cpu.h"
#include "engine/backends/cpu_backend.h"

namespace dv {
namespace {

// At least 512 MiB of cache bytes in units of unit_bytes, in the backend's K/V storage (huge
// pages), filled with varied bytes: every pass over them reads from memory, as decode does.
struct StreamedCache {
  StreamedCache(Backend& backend, int64_t unit_bytes)
      : units((int64_t{512} << 20) / unit_bytes + 1),
        storage(backend.AllocateKvStorage(static_cast<size_t>(units * unit_bytes))),
        bytes(reinterpret_cast<int8_t*>(storage->data())) {
    for (int64_t i = 0; i < units * unit_bytes; ++i) {
      bytes[i] = static_cast<int8_t>(i * 2654435761u >> 13);
    }
  }
  int64_t units;
  std::unique_ptr<KvStorage> storage;
  int8_t* bytes;
};

std::vector<int8_t> Queries(int64_t n) {
  std::vector<int8_t> q(static_cast<size_t>(n));
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>(i * 37 + 11);
  return q;
}

void BM_AttendGroupStream(benchmark::State& state) {
  const int64_t slots = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  auto backend = MakeCpuBackend({threads, std::nullopt, true, std::nullopt, true});
  const int64_t group = state.range(2);
  constexpr int64_t d = 128;
  const int64_t head_bytes = KvPaddedSlots(slots) * d;  // K or V of one (row, KV head)
  const StreamedCache cache(*backend, 2 * head_bytes);  // units: K and V of one head
  const int8_t* kv = cache.bytes;
  const int64_t heads = cache.units;
  const std::vector<int8_t> q = Queries(group * d);
  const Dyadic scales[2] = {{40000, 36}, {41000, 36}};
  struct Scratch {
    std::vector<int32_t> scores, probs;
    std::vector<int64_t> exps, ctx, tpos;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(backend->NumThreads()));
  for (Scratch& s : scratch) {
    s.scores.resize(static_cast<size_t>(group * slots));
    s.probs.resize(s.scores.size());
    s.exps.resize(s.scores.size());
    s.ctx.resize(static_cast<size_t>(group * d));
    s.tpos.resize(static_cast<size_t>(group));
  }
  const RowOps& ops = backend->row_ops();
  for (auto _ : state) {
    backend->ParallelFor(heads, [&](int64_t begin, int64_t end, int thread) {
      Scratch& s = scratch[static_cast<size_t>(thread)];
      for (int64_t h = begin; h < end; ++h) {
        const KvHeadView view{kv + 2 * h * head_bytes, kv + (2 * h + 1) * head_bytes, d};
        ops.AttendGroup(group, q.data(), view, slots, scales, slots, s.scores.data(), s.exps.data(),
                        s.probs.data(), s.ctx.data(), s.tpos.data());
      }
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * heads * 2 * KvPaddedSlots(slots) * d);
}
BENCHMARK(BM_AttendGroupStream)
    ->ArgsProduct({{576, 4096}, {1, 2}, {2}})
    ->Args({4096, 2, 1})
    ->ArgNames({"slots", "threads", "group"})
    ->UseRealTime();

// The two kernels of AttendGroup alone, over as many K (or V) bytes: the best ISA level's
// scores_pair, and its context_pair with fixed probabilities. "bytes_per_second" is the K (or V)
// bytes read.
void BM_AttentionPairKernelStream(benchmark::State& state) {
  const bool context = state.range(0) != 0;
  const int threads = static_cast<int>(state.range(1));
  constexpr int64_t slots = 4096, d = 128;
  auto backend = MakeCpuBackend({threads, std::nullopt, true, std::nullopt, true});
  const AttentionI8Kernel& kernel = AttentionI8KernelFor(CpuIsaFromEnvironment());
  if (kernel.scores_pair == nullptr || kernel.context_pair == nullptr) {
    return state.SkipWithError("this ISA level has no pair kernels");
  }
  const int64_t head_bytes = KvPaddedSlots(slots) * d;
  const StreamedCache cache(*backend, head_bytes);  // units: K (or V) of one head
  const int8_t* kv = cache.bytes;
  const int64_t heads = cache.units;
  const std::vector<int8_t> q = Queries(2 * d);
  std::vector<int32_t> probs(2 * slots);
  for (size_t i = 0; i < probs.size(); ++i)
    probs[i] = static_cast<int32_t>(i * 7 % 4);  // sum < 2^23
  struct Scratch {
    std::vector<int32_t> scores = std::vector<int32_t>(2 * slots);
    std::vector<int64_t> ctx = std::vector<int64_t>(2 * d);
  };
  std::vector<Scratch> scratch(static_cast<size_t>(backend->NumThreads()));
  const int64_t pf = 2048;  // the backend's default distance (DETVERIFY_PREFETCH is not read here)
  for (auto _ : state) {
    backend->ParallelFor(heads, [&](int64_t begin, int64_t end, int thread) {
      Scratch& s = scratch[static_cast<size_t>(thread)];
      for (int64_t h = begin; h < end; ++h) {
        const int8_t* head = kv + h * head_bytes;
        if (context) {
          kernel.context_pair(probs.data(), probs.data() + slots, head, slots, d, d, pf,
                              s.ctx.data(), s.ctx.data() + d);
        } else {
          kernel.scores_pair(q.data(), q.data() + d, head, slots, d, pf, s.scores.data(),
                             s.scores.data() + slots);
        }
      }
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * heads * head_bytes);
}
BENCHMARK(BM_AttentionPairKernelStream)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->ArgNames({"context", "threads"})
    ->UseRealTime();

}  // namespace
}  // namespace dv
