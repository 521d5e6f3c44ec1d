#include "float_engine/small_gemm.h"

#include <cstdlib>
#include <cstring>

#include "base/check.h"
#include "float_engine/small_gemm_kernels.h"

namespace dv {
namespace {

bool CpuHas(SmallGemmIsa isa) {
  if (isa == SmallGemmIsa::kNone) return true;
#if defined(DV_SMALL_GEMM_X86)
  // __builtin_cpu_supports reads CPUID and the XCR0 bits that say the OS saves the registers.
  if (isa == SmallGemmIsa::kAvx2) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }
  if (isa == SmallGemmIsa::kAvx512) return __builtin_cpu_supports("avx512f");
#endif
  return false;
}

void CheckKernel(SmallGemmIsa isa) {
  DV_CHECK(isa != SmallGemmIsa::kNone && CpuHas(isa))
      << "small GEMM: kernel " << SmallGemmIsaName(isa) << " not available";
}

void CheckCall(SmallGemmIsa isa, int64_t m, int64_t k, int64_t n) {
  CheckKernel(isa);
  DV_CHECK(m >= 1 && m <= kSmallGemmMaxRows && k >= 1 && n >= 1)
      << "small GEMM: shape " << m << " x " << k << " x " << n;
}

void Rows(SmallGemmIsa isa, const small_gemm::Args& g, int64_t j0, int64_t j1) {
#if defined(DV_SMALL_GEMM_X86)
  if (isa == SmallGemmIsa::kAvx512) return small_gemm::RowsAvx512(g, j0, j1);
  if (isa == SmallGemmIsa::kAvx2) return small_gemm::RowsAvx2(g, j0, j1);
#endif
  (void)g, (void)j0, (void)j1;
  DV_CHECK(false) << "small GEMM: no " << SmallGemmIsaName(isa) << " kernel in this build";
}

}  // namespace

bool SmallGemmIsaSupported(SmallGemmIsa isa) { return CpuHas(isa); }

SmallGemmIsa SmallGemmIsaForThisMachine() {
  const char* env = std::getenv("DETVERIFY_FLOAT_SMALL_GEMM");
  if (env != nullptr && std::strcmp(env, "off") == 0) return SmallGemmIsa::kNone;
  if (CpuHas(SmallGemmIsa::kAvx512)) return SmallGemmIsa::kAvx512;
  if (CpuHas(SmallGemmIsa::kAvx2)) return SmallGemmIsa::kAvx2;
  return SmallGemmIsa::kNone;
}

const char* SmallGemmIsaName(SmallGemmIsa isa) {
  switch (isa) {
    case SmallGemmIsa::kNone:
      return "none";
    case SmallGemmIsa::kAvx2:
      return "avx2";
    case SmallGemmIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

void SmallGemmXWtHere(SmallGemmIsa isa, const float* x, int64_t ldx, int64_t m, int64_t k,
                      const float* w, int64_t n, float* y, int64_t ldy) {
  CheckCall(isa, m, k, n);
  Rows(isa, small_gemm::Args{x, ldx, m, k, w, nullptr, n, y, ldy}, 0, n);
}

void SmallVecMatHere(SmallGemmIsa isa, const float* p, int64_t s, const float* v, int64_t ldv,
                     int64_t d, float* o) {
  CheckKernel(isa);
  DV_CHECK(s >= 0 && d >= 1 && ldv >= d) << "small GEMM: vector-matrix shape " << s << " x " << d;
#if defined(DV_SMALL_GEMM_X86)
  if (isa == SmallGemmIsa::kAvx512) return small_gemm::VecMatAvx512(p, s, v, ldv, d, o);
  if (isa == SmallGemmIsa::kAvx2) return small_gemm::VecMatAvx2(p, s, v, ldv, d, o);
#endif
  (void)p, (void)v, (void)o;
}

namespace {

void RunOverPool(SmallGemmIsa isa, const small_gemm::Args& g, os::ThreadPool& pool) {
  CheckCall(isa, g.m, g.k, g.n);
  // Pairs of weight rows over the pool (os::ParallelFor: a long contiguous piece per thread).
  os::ParallelFor(pool, (g.n + 1) / 2, [&](int64_t begin, int64_t end, int) {
    Rows(isa, g, 2 * begin, 2 * end < g.n ? 2 * end : g.n);
  });
}

}  // namespace

void SmallGemmXWt(SmallGemmIsa isa, const float* x, int64_t ldx, int64_t m, int64_t k,
                  const float* w, int64_t n, float* y, int64_t ldy, os::ThreadPool& pool) {
  RunOverPool(isa, small_gemm::Args{x, ldx, m, k, w, nullptr, n, y, ldy}, pool);
}

void SmallGemmXWt(SmallGemmIsa isa, const float* x, int64_t ldx, int64_t m, int64_t k,
                  const uint16_t* w, int64_t n, float* y, int64_t ldy, os::ThreadPool& pool) {
  DV_CHECK(w != nullptr) << "small GEMM: no bf16 weights";
  RunOverPool(isa, small_gemm::Args{x, ldx, m, k, nullptr, w, n, y, ldy}, pool);
}

}  // namespace dv
