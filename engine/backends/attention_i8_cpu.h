// The cpu backend's attention kernels over the K/V cache layout of engine/backends/row_ops.h:
// int8 scores (q . k for every slot) and the probability-weighted sum of V. Per-ISA translation
// units supply them; the softmax between them is in cpu_row_ops.cc.
#pragma once

#include <cstdint>

#include "engine/backends/cpu_features.h"

namespace dv {

struct AttentionI8Kernel {
  CpuIsa isa = CpuIsa::kScalar;
  // scores[s] = sum_j q8[j] * k8[s][j] for s in [0, n_slots), exact int32. q8 holds d4 bytes
  // (the head dimension rounded up to 4, zero padded); k is one KV head in the KvKOffset layout;
  // d4 <= 2^16 (so no partial sum reaches 2^31).
  void (*scores)(const int8_t* q8, const int8_t* k, int64_t n_slots, int64_t d4,
                 int32_t* scores) = nullptr;
  // ctx[j] = sum_s p[s] * v8[s][j] for j in [0, d), exact int64. v is one KV head in the
  // KvVOffset layout (row length d4). Requires 0 <= p[s] <= 2^14 and sum_s p[s] < 2^23, so
  // every int32 partial sum, |sum p * v| <= 128 * sum p < 2^30, is exact.
  void (*context)(const int32_t* p, const int8_t* v, int64_t n_slots, int64_t d, int64_t d4,
                  int64_t* ctx) = nullptr;
  // Two queries against one KV head (grouped-query attention) in one pass over K or V: the
  // results of scores(q8a), scores(q8b) and context(pa), context(pb), same preconditions. Null
  // where the level has none (the caller then calls the single forms). `prefetch_bytes`: how far
  // ahead of its loads the kernel asks for K or V bytes (the backend's prefetch distance; 0:
  // none). A prefetch changes no result.
  void (*scores_pair)(const int8_t* q8a, const int8_t* q8b, const int8_t* k, int64_t n_slots,
                      int64_t d4, int64_t prefetch_bytes, int32_t* scores_a,
                      int32_t* scores_b) = nullptr;
  void (*context_pair)(const int32_t* pa, const int32_t* pb, const int8_t* v, int64_t n_slots,
                       int64_t d, int64_t d4, int64_t prefetch_bytes, int64_t* ctx_a,
                       int64_t* ctx_b) = nullptr;
};

// The kernels of one ISA level; the caller checks CpuSupports(isa) first. neon and neondot use
// the portable kernels.
const AttentionI8Kernel& AttentionI8KernelFor(CpuIsa isa);

const AttentionI8Kernel* AttentionI8KernelScalar();
const AttentionI8Kernel* AttentionI8KernelAvx2();
const AttentionI8Kernel* AttentionI8KernelAvx512Vnni();

}  // namespace dv
