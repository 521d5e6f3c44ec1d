// Portable attention kernels (attention_i8_cpu.h): plain loops over the cache layout.
#include <algorithm>
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

// The context in int32 (exact: the caller guarantees sum p < 2^23, so |sum p * v| < 2^30), in
// runs of up to kContextRun channels so that the sums fit a stack array; int32 lanes let the
// compiler vectorize the loop where int64 ones did not.
constexpr int64_t kContextRun = 1024;

void ContextScalar(const int32_t* p, const int8_t* v, int64_t n_slots, int64_t d, int64_t d4,
                   int64_t* ctx) {
  for (int64_t j0 = 0; j0 < d; j0 += kContextRun) {
    const int64_t run = d - j0 < kContextRun ? d - j0 : kContextRun;
    int32_t acc[kContextRun];
    std::fill_n(acc, run, 0);
    for (int64_t group = 0; group * 4 < n_slots; ++group) {
      int32_t p4[4] = {0, 0, 0, 0};
      for (int64_t i = 0; i < 4 && group * 4 + i < n_slots; ++i) p4[i] = p[group * 4 + i];
      const int8_t* vg = v + group * 4 * d4 + 4 * j0;
      for (int64_t j = 0; j < run; ++j) {
        const int8_t* vj = vg + 4 * j;
        acc[j] += p4[0] * vj[0] + p4[1] * vj[1] + p4[2] * vj[2] + p4[3] * vj[3];
      }
    }
    for (int64_t j = 0; j < run; ++j) ctx[j0 + j] = acc[j];
  }
}

// Two queries per pass over K or V (grouped-query attention): the cache is read once for both,
// which halves a group's K/V traffic on the levels without kernels of their own (NEON: the
// compiler vectorizes these loops). No prefetch: these loops read K and V front to back, which
// the hardware prefetchers follow.
void ScoresPairScalar(const int8_t* qa, const int8_t* qb, const int8_t* k, int64_t n_slots,
                      int64_t d4, int64_t /*prefetch_bytes*/, int32_t* scores_a,
                      int32_t* scores_b) {
  for (int64_t block = 0; block * 16 < n_slots; ++block) {
    const int8_t* kb = k + block * 16 * d4;
    int32_t acc_a[16] = {}, acc_b[16] = {};
    for (int64_t g = 0; g < d4 / 4; ++g) {
      const int8_t* kg = kb + g * 64;
      const int8_t* a = qa + 4 * g;
      const int8_t* b = qb + 4 * g;
      for (int64_t s = 0; s < 16; ++s) {
        const int8_t* ks = kg + 4 * s;
        acc_a[s] += a[0] * ks[0] + a[1] * ks[1] + a[2] * ks[2] + a[3] * ks[3];
        acc_b[s] += b[0] * ks[0] + b[1] * ks[1] + b[2] * ks[2] + b[3] * ks[3];
      }
    }
    const int64_t first = block * 16;
    const auto bytes = static_cast<size_t>(n_slots - first < 16 ? n_slots - first : 16) * 4;
    std::memcpy(scores_a + first, acc_a, bytes);
    std::memcpy(scores_b + first, acc_b, bytes);
  }
}

void ContextPairScalar(const int32_t* pa, const int32_t* pb, const int8_t* v, int64_t n_slots,
                       int64_t d, int64_t d4, int64_t /*prefetch_bytes*/, int64_t* ctx_a,
                       int64_t* ctx_b) {
  for (int64_t j0 = 0; j0 < d; j0 += kContextRun) {
    const int64_t run = d - j0 < kContextRun ? d - j0 : kContextRun;
    int32_t acc_a[kContextRun], acc_b[kContextRun];
    std::fill_n(acc_a, run, 0);
    std::fill_n(acc_b, run, 0);
    for (int64_t group = 0; group * 4 < n_slots; ++group) {
      int32_t a4[4] = {0, 0, 0, 0}, b4[4] = {0, 0, 0, 0};
      for (int64_t i = 0; i < 4 && group * 4 + i < n_slots; ++i) {
        a4[i] = pa[group * 4 + i];
        b4[i] = pb[group * 4 + i];
      }
      const int8_t* vg = v + group * 4 * d4 + 4 * j0;
      for (int64_t j = 0; j < run; ++j) {
        const int8_t* vj = vg + 4 * j;
        acc_a[j] += a4[0] * vj[0] + a4[1] * vj[1] + a4[2] * vj[2] + a4[3] * vj[3];
        acc_b[j] += b4[0] * vj[0] + b4[1] * vj[1] + b4[2] * vj[2] + b4[3] * vj[3];
      }
    }
    for (int64_t j = 0; j < run; ++j) {
      ctx_a[j0 + j] = acc_a[j];
      ctx_b[j0 + j] = acc_b[j];
    }
  }
}

constexpr AttentionI8Kernel kScalarKernel = {
    .isa = CpuIsa::kScalar,
    .scores = &ScoresScalar,
    .context = &ContextScalar,
    .scores_pair = &ScoresPairScalar,
    .context_pair = &ContextPairScalar,
};

}  // namespace

const AttentionI8Kernel* AttentionI8KernelScalar() { return &kScalarKernel; }

}  // namespace dv
