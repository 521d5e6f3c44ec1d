// Dispatch of the fixed-order GEMM: the level, the column split across threads.
#include "prepare/fixed_order_gemm.h"

#include <algorithm>
#include <cstdlib>

#include "base/expected_error.h"
#include "prepare/parallel_ranges.h"

namespace dv {
namespace {

using PanelsFn = void (*)(const double*, const double*, double*, const GemmShape&, int64_t, int64_t,
                          bool, bool, double*);

PanelsFn Kernel(GemmIsa isa) {
  switch (isa) {
#if DV_PREPARE_X86_KERNELS
    case GemmIsa::kAvx2:
      return GemmPanelsAvx2;
    case GemmIsa::kAvx512:
      return GemmPanelsAvx512;
#endif
    default:
      return GemmPanelsBaseline;
  }
}

bool Supported(GemmIsa isa) {
  if (isa == GemmIsa::kBaseline) return true;
#if DV_PREPARE_X86_KERNELS
  __builtin_cpu_init();
  if (isa == GemmIsa::kAvx2) return __builtin_cpu_supports("avx2");
  if (isa == GemmIsa::kAvx512) return __builtin_cpu_supports("avx512f");
#endif
  return false;
}

}  // namespace

const char* GemmIsaName(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::kAvx2:
      return "avx2";
    case GemmIsa::kAvx512:
      return "avx512";
    default:
      return "baseline";
  }
}

GemmIsa ParseGemmIsa(const std::string& name) {
  for (GemmIsa isa : {GemmIsa::kBaseline, GemmIsa::kAvx2, GemmIsa::kAvx512}) {
    if (name == GemmIsaName(isa)) return isa;
  }
  throw ExpectedError("unknown level '" + name + "' (known: baseline, avx2, avx512)");
}

std::vector<GemmIsa> SupportedGemmIsas() {
  std::vector<GemmIsa> out;
  for (GemmIsa isa : {GemmIsa::kBaseline, GemmIsa::kAvx2, GemmIsa::kAvx512}) {
    if (Supported(isa)) out.push_back(isa);
  }
  return out;
}

GemmIsa GemmIsaFromEnvironment() {
  const char* env = std::getenv("DETVERIFY_PREPARE_ISA");
  if (env == nullptr || *env == '\0') return SupportedGemmIsas().back();
  GemmIsa isa;
  try {
    isa = ParseGemmIsa(env);
  } catch (const ExpectedError& e) {
    throw ExpectedError(std::string("DETVERIFY_PREPARE_ISA: ") + e.what());
  }
  if (!Supported(isa)) {
    std::string have;
    for (GemmIsa s : SupportedGemmIsas())
      have += std::string(have.empty() ? "" : ", ") + GemmIsaName(s);
    throw ExpectedError(std::string("DETVERIFY_PREPARE_ISA: this CPU cannot run ") + env +
                        " (it has " + have + ")");
  }
  return isa;
}

void GemmFixedOrder(const double* x, const double* w, double* y, const GemmShape& shape,
                    const GemmRun& run) {
  GemmShape s = shape;
  if (s.ldx == 0) s.ldx = s.k;
  if (s.ldw == 0) s.ldw = s.n;
  if (s.ldy == 0) s.ldy = s.n;
  if (s.m <= 0 || s.n <= 0) return;
  const PanelsFn kernel = Kernel(run.isa);
  const int64_t panels = (s.n + kGemmPanel - 1) / kGemmPanel;
  ParallelRanges(run.threads, panels, 1, [&](int64_t p0, int64_t p1) {
    std::vector<double> panel(static_cast<size_t>(std::max<int64_t>(s.k, 1) * kGemmPanel));
    kernel(x, w, y, s, p0, p1, run.causal_columns, run.causal_terms, panel.data());
  });
}

}  // namespace dv
