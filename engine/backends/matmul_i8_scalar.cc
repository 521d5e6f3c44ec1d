// The portable int8 GEMM kernel: plain C++ over the packed layout (matmul_i8_cpu.h), 16-column
// panels, signed weights. Compilers vectorize the inner loop for the host (SSE2, NEON).
// Accumulation is in uint32 so that wrapped partial sums are defined; the result is exact
// because the true sum fits int32 (callers guarantee k * 127^2 < 2^31).
#include <cstring>

#include "engine/backends/matmul_i8_cpu.h"

namespace dv {
namespace {

constexpr int64_t kNr = 16;

void MatmulScalar(const MatmulI8Args& args, int64_t panel_begin, int64_t panel_end) {
  const int64_t groups = args.lda / 4;
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const int8_t* panel = reinterpret_cast<const int8_t*>(args.panels) + p * groups * kNr * 4;
    const int64_t col0 = p * kNr;
    const int64_t cols = args.n - col0 < kNr ? args.n - col0 : kNr;
    for (int64_t r = 0; r < args.m; ++r) {
      const int8_t* a = args.a + r * args.lda;
      uint32_t acc[kNr] = {};
      for (int64_t g = 0; g < groups; ++g) {
        const int8_t* a4 = a + 4 * g;
        const int8_t* w = panel + g * kNr * 4;
        for (int64_t c = 0; c < kNr; ++c) {
          const int32_t dot =
              a4[0] * w[4 * c] + a4[1] * w[4 * c + 1] + a4[2] * w[4 * c + 2] + a4[3] * w[4 * c + 3];
          acc[c] += static_cast<uint32_t>(dot);
        }
      }
      int32_t* c_row = args.c + r * args.n + col0;
      for (int64_t c = 0; c < cols; ++c) c_row[c] = static_cast<int32_t>(acc[c]);
    }
  }
}

uint64_t StreamReadScalar(const uint8_t* p, int64_t n, int64_t) {
  uint64_t acc[8] = {};
  for (int64_t i = 0; i < n; i += 64) {
    for (int64_t w = 0; w < 8; ++w) {
      uint64_t v;
      std::memcpy(&v, p + i + 8 * w, sizeof(v));
      acc[w] += v;
    }
  }
  return acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
}

constexpr MatmulI8Kernel kScalarKernel = {
    .isa = CpuIsa::kScalar,
    .panel_cols = kNr,
    .offset_weights = false,
    .matmul = &MatmulScalar,
    .row_sums = nullptr,
    .stream_read = &StreamReadScalar,
};

}  // namespace

const MatmulI8Kernel* MatmulI8KernelScalar() { return &kScalarKernel; }

}  // namespace dv
