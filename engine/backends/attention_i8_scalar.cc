// Portable attention kernels (attention_i8_cpu.h): plain loops over the cache layout. The pair
// forms read K or V once for two queries (grouped-query attention), which halves a group's K/V
// traffic on the levels without kernels of their own; no prefetch: these loops read K and V front
// to back, which the hardware prefetchers follow.
#include <algorithm>
#include <cstring>

#include "engine/backends/attention_i8_cpu.h"

namespace dv {
namespace {

// scores[x][s] = q[x] . k[s] for kQueries queries, one pass over K.
template <size_t kQueries>
void Scores(const int8_t* const* q, const int8_t* k, int64_t n_slots, int64_t d4,
            int32_t* const* scores) {
  for (int64_t block = 0; block * 16 < n_slots; ++block) {
    const int8_t* kb = k + block * 16 * d4;
    int32_t acc[kQueries][16] = {};
    for (int64_t g = 0; g < d4 / 4; ++g) {
      const int8_t* kg = kb + g * 64;
      for (int64_t s = 0; s < 16; ++s) {
        const int8_t* ks = kg + 4 * s;
        for (size_t x = 0; x < kQueries; ++x) {
          const int8_t* qg = q[x] + 4 * g;
          acc[x][s] += qg[0] * ks[0] + qg[1] * ks[1] + qg[2] * ks[2] + qg[3] * ks[3];
        }
      }
    }
    const int64_t first = block * 16;
    const auto bytes = static_cast<size_t>(n_slots - first < 16 ? n_slots - first : 16) * 4;
    for (size_t x = 0; x < kQueries; ++x) std::memcpy(scores[x] + first, acc[x], bytes);
  }
}

// ctx[x][j] = sum_s p[x][s] * v[s][j] for kQueries queries, one pass over V. The sums are int32
// (exact: the caller guarantees sum p < 2^23, so |sum p * v| < 2^30), in runs of up to
// kContextRun channels so that they fit a stack array; int32 lanes let the compiler vectorize
// the loop where int64 ones did not.
constexpr int64_t kContextRun = 1024;

template <size_t kQueries>
void Context(const int32_t* const* p, const int8_t* v, int64_t n_slots, int64_t d, int64_t d4,
             int64_t* const* ctx) {
  for (int64_t j0 = 0; j0 < d; j0 += kContextRun) {
    const int64_t run = d - j0 < kContextRun ? d - j0 : kContextRun;
    int32_t acc[kQueries][kContextRun];
    for (size_t x = 0; x < kQueries; ++x) std::fill_n(acc[x], run, 0);
    for (int64_t group = 0; group * 4 < n_slots; ++group) {
      int32_t p4[kQueries][4] = {};
      for (int64_t i = 0; i < 4 && group * 4 + i < n_slots; ++i) {
        for (size_t x = 0; x < kQueries; ++x) p4[x][i] = p[x][group * 4 + i];
      }
      const int8_t* vg = v + group * 4 * d4 + 4 * j0;
      for (int64_t j = 0; j < run; ++j) {
        const int8_t* vj = vg + 4 * j;
        for (size_t x = 0; x < kQueries; ++x) {
          acc[x][j] += p4[x][0] * vj[0] + p4[x][1] * vj[1] + p4[x][2] * vj[2] + p4[x][3] * vj[3];
        }
      }
    }
    for (size_t x = 0; x < kQueries; ++x) {
      for (int64_t j = 0; j < run; ++j) ctx[x][j0 + j] = acc[x][j];
    }
  }
}

void ScoresScalar(const int8_t* q8, const int8_t* k, int64_t n_slots, int64_t d4, int32_t* scores) {
  Scores<1>(&q8, k, n_slots, d4, &scores);
}

void ContextScalar(const int32_t* p, const int8_t* v, int64_t n_slots, int64_t d, int64_t d4,
                   int64_t* ctx) {
  Context<1>(&p, v, n_slots, d, d4, &ctx);
}

void ScoresPairScalar(const int8_t* qa, const int8_t* qb, const int8_t* k, int64_t n_slots,
                      int64_t d4, int64_t /*prefetch_bytes*/, int32_t* scores_a,
                      int32_t* scores_b) {
  const int8_t* q[2] = {qa, qb};
  int32_t* scores[2] = {scores_a, scores_b};
  Scores<2>(q, k, n_slots, d4, scores);
}

void ContextPairScalar(const int32_t* pa, const int32_t* pb, const int8_t* v, int64_t n_slots,
                       int64_t d, int64_t d4, int64_t /*prefetch_bytes*/, int64_t* ctx_a,
                       int64_t* ctx_b) {
  const int32_t* p[2] = {pa, pb};
  int64_t* ctx[2] = {ctx_a, ctx_b};
  Context<2>(p, v, n_slots, d, d4, ctx);
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
