#include "float_engine/small_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

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

small_gemm::XLayout LayoutFor(SmallGemmIsa isa, int64_t m) {
#if defined(DV_SMALL_GEMM_X86)
  if (isa == SmallGemmIsa::kAvx512) return small_gemm::XLayoutAvx512(m);
  if (isa == SmallGemmIsa::kAvx2) return small_gemm::XLayoutAvx2(m);
#endif
  (void)m;
  DV_CHECK(false) << "small GEMM: no " << SmallGemmIsaName(isa) << " kernel in this build";
  return {};
}

// x packed for the kernel of `isa` into the calling thread's buffer (grown, never shrunk: at
// most kSmallGemmMaxRows rows of the widest k), 64-byte aligned for the kernels' aligned loads.
const float* PackedX(SmallGemmIsa isa, const float* x, int64_t ldx, int64_t m, int64_t k) {
  struct alignas(64) Line {
    float v[16];
  };
  thread_local std::vector<Line> buffer;
  const small_gemm::XLayout layout = LayoutFor(isa, m);
  const auto lines = static_cast<size_t>((small_gemm::PackedXFloats(m, k, layout) + 15) / 16);
  if (buffer.size() < lines) buffer.resize(lines);
  float* packed = buffer.data()->v;
  small_gemm::PackX(x, ldx, m, k, layout, packed);
  return packed;
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

namespace small_gemm {

int64_t PackedXFloats(int64_t m, int64_t k, XLayout layout) {
  return (m + layout.block - 1) / layout.block * PackedBlockFloats(k, layout);
}

void PackX(const float* x, int64_t ldx, int64_t m, int64_t k, XLayout layout, float* packed) {
  const int64_t lanes = layout.lanes, steps = (k + lanes - 1) / lanes;
  for (int64_t r0 = 0; r0 < m; r0 += layout.block) {
    const int64_t mr = std::min(layout.block, m - r0);
    float* block = packed + r0 / layout.block * PackedBlockFloats(k, layout);
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t i = s * lanes, count = std::min(lanes, k - i);
      for (int64_t r = 0; r < mr; ++r) {
        float* out = block + (s * mr + r) * lanes;
        std::memcpy(out, x + (r0 + r) * ldx + i, static_cast<size_t>(count) * sizeof(float));
        std::fill(out + count, out + lanes, 0.0f);
      }
    }
  }
}

}  // namespace small_gemm

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
  Rows(isa, small_gemm::Args{PackedX(isa, x, ldx, m, k), m, k, w, nullptr, n, y, ldy}, 0, n);
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

// x packed on the calling thread, once for every thread of the pool.
template <typename W>
void RunOverPool(SmallGemmIsa isa, const float* x, int64_t ldx, int64_t m, int64_t k, const W* w,
                 int64_t n, float* y, int64_t ldy, os::ThreadPool& pool) {
  CheckCall(isa, m, k, n);
  small_gemm::Args g{PackedX(isa, x, ldx, m, k), m, k, nullptr, nullptr, n, y, ldy};
  if constexpr (std::is_same_v<W, float>) {
    g.w = w;
  } else {
    g.wb = w;
  }
  // Pairs of weight rows over the pool (os::ParallelFor: a long contiguous piece per thread).
  os::ParallelFor(pool, (g.n + 1) / 2, [&](int64_t begin, int64_t end, int) {
    Rows(isa, g, 2 * begin, 2 * end < g.n ? 2 * end : g.n);
  });
}

}  // namespace

void SmallGemmXWt(SmallGemmIsa isa, const float* x, int64_t ldx, int64_t m, int64_t k,
                  const float* w, int64_t n, float* y, int64_t ldy, os::ThreadPool& pool) {
  RunOverPool(isa, x, ldx, m, k, w, n, y, ldy, pool);
}

void SmallGemmXWt(SmallGemmIsa isa, const float* x, int64_t ldx, int64_t m, int64_t k,
                  const uint16_t* w, int64_t n, float* y, int64_t ldy, os::ThreadPool& pool) {
  DV_CHECK(w != nullptr) << "small GEMM: no bf16 weights";
  RunOverPool(isa, x, ldx, m, k, w, n, y, ldy, pool);
}

}  // namespace dv
