// The float engine's GEMM for a few rows (batched decode: 2-16 tokens a call). OpenBLAS 0.3.21's
// sgemm packs every weight matrix again on each call and reaches about a third of the cores'
// FMA rate at 8 rows (docs/RESULTS.md, "The float engine's small-batch GEMM"); this kernel
// streams each weight row once, straight from the float engine's weight memory, into one vector
// accumulator per (token, weight row), and splits the weight rows over a thread pool.
//
// What a framework's CPU path does for such shapes -- a kernel chosen by shape -- so a float
// row's reduction order still depends on the batch: 1 row goes to OpenBLAS's sgemv, 2-16 rows
// here, more to sgemm (bf16 weights: 1-64 rows here, 16 a call, more to sgemm on widened
// blocks). Within this kernel every output is the same sum in the same order for any number of
// rows, row position and thread count (the vector width decides it: 16 lanes with AVX-512, 8
// with AVX2), which the tests check exactly.
#pragma once

#include <cstdint>
#include <string>

#include "os/thread_pool.h"

namespace dv {

// Rows a call may have (2 .. kSmallGemmMaxRows).
inline constexpr int64_t kSmallGemmMaxRows = 16;
// bf16 mode sends products of up to this many rows to the kernel, in calls of kSmallGemmMaxRows
// rows (each a pass over the weights): measured faster than sgemm on widened weights up to it.
inline constexpr int64_t kSmallGemmBf16MaxRows = 64;

enum class SmallGemmIsa {
  kNone,    // no kernel on this CPU (not x86-64, or no AVX2 + FMA): OpenBLAS's sgemm instead
  kAvx2,    // 8 fp32 lanes, FMA
  kAvx512,  // 16 fp32 lanes (AVX-512 F)
};

// The best kernel this CPU runs; DETVERIFY_FLOAT_SMALL_GEMM=off makes it kNone (every call to
// OpenBLAS, as before this kernel existed: the before/after comparison of docs/RESULTS.md).
SmallGemmIsa SmallGemmIsaForThisMachine();
bool SmallGemmIsaSupported(SmallGemmIsa isa);
const char* SmallGemmIsaName(SmallGemmIsa isa);  // "none", "avx2", "avx512"

// y[m, n] = x[m, k] . w[n, k]^T (w in nn.Linear's [out, in] layout, rows k apart; x rows ldx
// apart, y rows ldy apart), 1 <= m <= kSmallGemmMaxRows, isa supported (DV_CHECKed). Every
// output is its x row's and w row's dot product in one order: with L lanes (8 or 16), lane l
// accumulates x[i] * w[i] for i = l mod L by fused multiply-adds from 0 in increasing i (the
// last partial vector's missing lanes add 0 * 0), and the lanes are then added pairwise in
// halves -- 16 lanes: s_l = a_l + a_{l+8}; then s_l + s_{l+4} (l < 4); (u0 + u2, u1 + u3); the
// two. Independent of m, of the other rows and of how the pool splits the weight rows.
void SmallGemmXWt(SmallGemmIsa isa, const float* x, int64_t ldx, int64_t m, int64_t k,
                  const float* w, int64_t n, float* y, int64_t ldy, os::ThreadPool& pool);

// The same with bfloat16 weights (w: their bit patterns, [n, k]): each weight is widened to its
// exact fp32 value in the kernel, so every output is bit for bit the fp32 call's on the widened
// weights, with half the bytes to stream. The float engine's bf16 mode stores its linear weights
// so and sends products of up to kSmallGemmBf16MaxRows rows here, 16 rows a call.
void SmallGemmXWt(SmallGemmIsa isa, const float* x, int64_t ldx, int64_t m, int64_t k,
                  const uint16_t* w, int64_t n, float* y, int64_t ldy, os::ThreadPool& pool);

// The same products on the calling thread only (the same bits): for work that is itself one of
// many parallel tasks, such as one attention head's query-key scores in decode.
void SmallGemmXWtHere(SmallGemmIsa isa, const float* x, int64_t ldx, int64_t m, int64_t k,
                      const float* w, int64_t n, float* y, int64_t ldy);

// o[d] = p[s] . v[s, d] (v rows ldv apart) on the calling thread, isa supported: each output
// o[c] is sum_j p[j] * v[j, c] by fused multiply-adds from 0 in increasing j. Decode attention's
// probabilities times values.
void SmallVecMatHere(SmallGemmIsa isa, const float* p, int64_t s, const float* v, int64_t ldv,
                     int64_t d, float* o);

}  // namespace dv
