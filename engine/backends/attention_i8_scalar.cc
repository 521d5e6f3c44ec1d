// Portable attention kernels (attention_i8_cpu.h): plain loops over the cache layout.
#include <cstring>

#include "engine/backends/attention_i8_cpu.h"

namespace dv {
namespace {

void ScoresScalar(const int8_t* q8, const int8_t* k, int64_t n_slots, int64_t d4, int32_t* scores) {
  for (int64_t block = 0; block * 16 < n_slots; ++block) {
    const int8_t* kb = k + block * 16 * d4;
    int32_t acc[16] = {};
    for (int64_t g = 0; g < d4 / 4; ++g) {
      const int8_t* kg = kb + g * 64;
      const int8_t* q = q8 + 4 * g;
      for (int64_t s = 0; s < 16; ++s) {
        acc[s] +=
            q[0] * kg[4 * s] + q[1] * kg[4 * s + 1] + q[2] * kg[4 * s + 2] + q[3] * kg[4 * s + 3];
      }
    }
    const int64_t first = block * 16;
    const int64_t count = n_slots - first < 16 ? n_slots - first : 16;
    std::memcpy(scores + first, acc, static_cast<size_t>(count) * sizeof(int32_t));
  }
}

void ContextScalar(const int32_t* p, const int8_t* v, int64_t n_slots, int64_t d, int64_t d4,
                   int64_t* ctx) {
  for (int64_t j = 0; j < d; ++j) ctx[j] = 0;
  for (int64_t group = 0; group * 4 < n_slots; ++group) {
    int32_t p4[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < 4 && group * 4 + i < n_slots; ++i) p4[i] = p[group * 4 + i];
    const int8_t* vg = v + group * 4 * d4;
    for (int64_t j = 0; j < d; ++j) {
      ctx[j] +=
          p4[0] * vg[4 * j] + p4[1] * vg[4 * j + 1] + p4[2] * vg[4 * j + 2] + p4[3] * vg[4 * j + 3];
    }
  }
}

constexpr AttentionI8Kernel kScalarKernel = {
    .isa = CpuIsa::kScalar, .scores = &ScoresScalar, .context = &ContextScalar};

}  // namespace

const AttentionI8Kernel* AttentionI8KernelScalar() { return &kScalarKernel; }

}  // namespace dv
