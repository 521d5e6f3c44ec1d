// The cpu backend's row operations against the plain definitions, at the 0.6B model's row
// lengths: the per-token work between GEMMs that batch-1 decode cannot spread over threads.
//   cpu_backend_bench --benchmark_filter=RowOps
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "engine/backends/cpu_row_ops.h"

namespace dv {
namespace {

std::unique_ptr<RowOps> OpsFor(int64_t which) {
  if (which < 0) return std::make_unique<RowOps>();
  const auto isa = static_cast<CpuIsa>(which);
  if (!CpuSupports(isa)) return nullptr;
  return std::make_unique<CpuRowOps>(isa);
}

void RowOpsArgs(benchmark::internal::Benchmark* b) {
  // plain RowOps, CpuRowOps scalar, avx2, avx512vnni
  b->Arg(-1)->Arg(0)->Arg(2)->Arg(3)->ArgName("ops");
}

void BM_RowOpsQuantI8(benchmark::State& state) {
  auto ops = OpsFor(state.range(0));
  if (!ops) return state.SkipWithError("ISA level not supported here");
  std::vector<int64_t> x(3072);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<int64_t>((i * 2654435761u) % 200000) - 100000;
  std::vector<int8_t> y(x.size());
  for (auto _ : state) {
    benchmark::DoNotOptimize(ops->QuantI8(x.data(), 3072, 1, 20, y.data(), nullptr));
  }
  state.SetItemsProcessed(state.iterations() * 3072);
}
BENCHMARK(BM_RowOpsQuantI8)->Apply(RowOpsArgs);

void BM_RowOpsRmsNorm(benchmark::State& state) {
  auto ops = OpsFor(state.range(0));
  if (!ops) return state.SkipWithError("ISA level not supported here");
  std::vector<int32_t> x(1024), y(1024);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<int32_t>((i * 2654435761u) % (1u << 29)) - (1 << 28);
  for (auto _ : state) {
    ops->RmsNorm(x.data(), 1024, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * 1024);
}
BENCHMARK(BM_RowOpsRmsNorm)->Apply(RowOpsArgs);

// One query head of the Q/K head pipeline (engine/model.cc QkvHeads) at head_dim 128: requant
// to 16 bits, QK-Norm with gamma (one Isqrt and one divisor a head), RoPE, smoothing, quantize.
// A batch-8 decode step of the 0.6B model runs 8 x 24 of these per layer.
void BM_RowOpsQkHead(benchmark::State& state) {
  auto ops = OpsFor(state.range(0));
  if (!ops) return state.SkipWithError("ISA level not supported here");
  constexpr int64_t d = 128;
  std::vector<int32_t> p(d), y32(d);
  std::vector<int64_t> col_m(d), gamma(d), smooth(d), y64(d);
  std::vector<int16_t> cos_row(d), sin_row(d);
  std::vector<int8_t> q8(d);
  for (size_t i = 0; i < d; ++i) {
    p[i] = static_cast<int32_t>((i * 2654435761u) % (1u << 24)) - (1 << 23);
    col_m[i] = 20000 + static_cast<int64_t>((i * 40503u) % 20000);
    gamma[i] = 30000 + static_cast<int64_t>((i * 977u) % 5000);
    smooth[i] = 16000 + static_cast<int64_t>((i * 131u) % 8000);
    cos_row[i] = static_cast<int16_t>(16384 - static_cast<int>(i) * 50);
    sin_row[i] = static_cast<int16_t>(static_cast<int>(i) * 60);
  }
  for (auto _ : state) {
    ops->RequantI32(p.data(), col_m.data(), d, 16, y32.data());
    ops->RmsNormGamma(y32.data(), d, gamma.data(), y64.data());
    ops->Rope(y64.data(), d, cos_row.data(), sin_row.data());
    ops->MulColumns(y64.data(), smooth.data(), d, y64.data());
    benchmark::DoNotOptimize(ops->QuantI8(y64.data(), d, 1, 40, q8.data(), nullptr));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RowOpsQkHead)->Apply(RowOpsArgs);

// The MLP's gate or up row (engine/model.cc MlpBlock) requantized to 14 bits against its
// column mantissas (< 2^16, as the loader checks): the max pass and the requantizing pass.
void BM_RowOpsRequantI32(benchmark::State& state) {
  auto ops = OpsFor(state.range(0));
  if (!ops) return state.SkipWithError("ISA level not supported here");
  constexpr int64_t n = 3072;
  std::vector<int32_t> p(n), y(n);
  std::vector<int64_t> col_m(n);
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] = static_cast<int32_t>((i * 2654435761u) % (1u << 24)) - (1 << 23);
    col_m[i] = 20000 + static_cast<int64_t>((i * 40503u) % 40000);
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(ops->RequantI32(p.data(), col_m.data(), n, 14, y.data()));
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_RowOpsRequantI32)->Apply(RowOpsArgs);

void BM_RowOpsSwiglu(benchmark::State& state) {
  auto ops = OpsFor(state.range(0));
  if (!ops) return state.SkipWithError("ISA level not supported here");
  std::vector<int32_t> g(3072), u(3072);
  std::vector<int64_t> y(3072);
  for (size_t i = 0; i < g.size(); ++i) {
    g[i] = static_cast<int32_t>((i * 2654435761u) % 32768) - 16384;
    u[i] = static_cast<int32_t>((i * 40503u) % 32768) - 16384;
  }
  for (auto _ : state) {
    ops->Swiglu(g.data(), u.data(), 3072, int64_t{1} << 20, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * 3072);
}
BENCHMARK(BM_RowOpsSwiglu)->Apply(RowOpsArgs);

void BM_RowOpsAttend(benchmark::State& state) {
  auto ops = OpsFor(state.range(0));
  if (!ops) return state.SkipWithError("ISA level not supported here");
  const int64_t d = 128, slots = 576;
  std::vector<int8_t> k(static_cast<size_t>(KvPaddedSlots(slots) * d)), v(k.size()), q(d);
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<int8_t>(i * 7);
    v[i] = static_cast<int8_t>(i * 13);
  }
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>(i * 5);
  const KvHeadView kv{k.data(), v.data(), d};
  std::vector<int32_t> scores(slots), probs(slots);
  std::vector<int64_t> exps(slots), ctx(d);
  for (auto _ : state) {
    benchmark::DoNotOptimize(ops->Attend(q.data(), kv, slots, {40000, 36}, scores.data(),
                                         exps.data(), probs.data(), ctx.data()));
  }
  state.SetItemsProcessed(state.iterations() * slots);
}
BENCHMARK(BM_RowOpsAttend)->Apply(RowOpsArgs);

}  // namespace
}  // namespace dv
