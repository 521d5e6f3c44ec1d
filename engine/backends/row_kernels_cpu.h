// Element loops of the cpu backend's row operations (cpu_row_ops.cc), one table per ISA level.
// Each entry computes exactly what the scalar loop it stands for computes, for every input
// inside the stated preconditions (the caller checks them and otherwise runs the plain
// definition); tests/cpu_backend holds every level to the plain RowOps, operation by operation.
// The notation is docs/SPEC.md's: rsr = RoundingShiftRight, << = ShiftLeftWrap, >> =
// ShiftRightArith, every +, -, * wrapping modulo 2^64.
#pragma once

#include <cstdint>

#include "engine/backends/cpu_features.h"

namespace dv {

// The constants of a RowDivisor (cpu_divide.h): floor(n / divisor) = n when magic == 0, else
// (high 64 bits of n * magic) >> shift, for 0 <= n < 2^63.
struct RowDivisorParams {
  uint64_t divisor = 1;
  uint64_t magic = 0;
  int64_t shift = 0;
};

// A rounding shift rsr(v, k) as the kernels take it: k and the addend 1 << (k - 1) (0 for k = 0),
// computed by the caller with the scalar definitions, so every edge (k >= 64) is the spec's.
struct RoundShift {
  int64_t count = 0;
  int64_t addend = 0;
};

struct RowKernels {
  CpuIsa isa = CpuIsa::kScalar;

  // max(1, max_i |x[i]|), |INT64_MIN| = INT64_MIN (MaxAbsClamped).
  int64_t (*max_abs_i64)(const int64_t* x, int64_t n) = nullptr;
  // max_i |x[i]| of int32 values, as int64 (0 for an empty row).
  int64_t (*max_abs_i32)(const int32_t* x, int64_t n) = nullptr;

  // y[i] = SaturateToInt8(rhad(x[i] * 127, div)) for i below the returned count, which is n
  // unless some |x[i] * 127| + divisor/2 leaves [0, 2^63) (the caller finishes from there).
  int64_t (*quantize_i8)(const int64_t* x, int64_t n, const RowDivisorParams& div,
                         int8_t* y) = nullptr;
  // s[i] = p[i] * col_m[i] (s may be null); returns max(1, max_i |p[i] * col_m[i]|). *narrow
  // (when not null) says whether the kernel found every col_m[i] in [0, 2^31), where a 32 x 32
  // -> 64 multiply gives the product (false from a kernel that does not look).
  int64_t (*mul_columns_max_abs)(const int32_t* p, const int64_t* col_m, int64_t n, int64_t* s,
                                 bool* narrow) = nullptr;
  // y[i] = int32(rsr(p[i] * col_m[i], sh)); narrow: mul_columns_max_abs found these col_m
  // narrow.
  void (*requant_i32)(const int32_t* p, const int64_t* col_m, int64_t n, RoundShift sh,
                      bool narrow, int32_t* y) = nullptr;
  // s[i] = rsr(s[i], sh) in place; returns max(1, max_i |s[i]|).
  int64_t (*round_shift_max_abs)(int64_t* s, int64_t n, RoundShift sh) = nullptr;

  // RMSNorm with the pre-shift xp = rsr(x, down) << up: returns sum_i xp[i]^2.
  int64_t (*norm_sum_squares)(const int32_t* x, int64_t n, RoundShift down, int64_t up) = nullptr;
  // v[i] = int32(rhad(xp[i] << 20, div)); y32[i] = v[i] when gamma is null, else
  // y64[i] = v[i] * gamma[i]. Returns the count done (as quantize_i8).
  int64_t (*norm_divide)(const int32_t* x, int64_t n, RoundShift down, int64_t up,
                         const RowDivisorParams& div, const int64_t* gamma, int32_t* y32,
                         int64_t* y64) = nullptr;

  // Residual add, value(i) = h[i] + (rsr(d[i] * dm, down) << up):
  // max_i |value(i)| (not clamped) ...
  int64_t (*residual_max_abs)(const int32_t* h, const int32_t* d, int64_t n, int64_t dm,
                              RoundShift down, int64_t up) = nullptr;
  // ... and h[i] = int32(rsr(value(i), down2) << up2).
  void (*residual_write)(int32_t* h, const int32_t* d, int64_t n, int64_t dm, RoundShift down,
                         int64_t up, RoundShift down2, int64_t up2) = nullptr;

  // y[i] = x[i] * m[i] (y does not overlap x: a kernel may write y twice).
  void (*mul_i32_i64)(const int32_t* x, const int64_t* m, int64_t n, int64_t* y) = nullptr;
  void (*mul_i64_i64)(const int64_t* x, const int64_t* m, int64_t n, int64_t* y) = nullptr;

  // ApplyIntRope in place on x[d] with the Q14 table rows.
  void (*rope)(int64_t* x, int64_t d, const int16_t* cos_row, const int16_t* sin_row) = nullptr;

  // y[i] = gate[i] * DiSigmoid(gate[i], tpos) * up[i]; requires 1 <= tpos < 2^55 (tpos_div
  // divides by tpos).
  void (*swiglu)(const int32_t* gate, const int32_t* up, int64_t n, int64_t tpos,
                 const RowDivisorParams& tpos_div, int64_t* y) = nullptr;

  // exps[i] = DiExp(scores[i] - row_max, tpos), every scores[i] <= row_max (an int32, as the
  // scores are: every distance is below 2^32); returns sum exps. Requires 1 <= tpos < 2^48 and
  // n <= 2^15 (so the sum stays below 2^63).
  int64_t (*softmax_exps)(const int32_t* scores, int64_t n, int32_t row_max, int64_t tpos,
                          const RowDivisorParams& tpos_div, int64_t* exps) = nullptr;
  // probs[i] = floor(((exps[i] << 14) + D/2) / D) with D = denom_div.divisor; returns sum
  // probs. Requires 0 <= exps[i] < 2^48 and D < 2^63.
  int64_t (*softmax_normalize)(const int64_t* exps, int64_t n, const RowDivisorParams& denom_div,
                               int32_t* probs) = nullptr;

  // y[i] = SaturateToInt8(rhad((p[i] * col_m[i] * row_m) << up, div)); returns the count done.
  int64_t (*requant_static)(const int32_t* p, const int64_t* col_m, int64_t n, int64_t row_m,
                            int64_t up, const RowDivisorParams& div, int8_t* y) = nullptr;
  // The smallest v attaining max_v logits[v] * head_m[v], 0 when every product is INT64_MIN.
  int64_t (*greedy_pick)(const int32_t* logits, const int64_t* head_m, int64_t n) = nullptr;
  // y[i] = RequantI8Static(p[i], row_m, row_k, 1, 0, s_m[i], s_k[i]) (a divisor per element);
  // returns the count done: it stops where a divisor leaves [1, 2^55) or a dividend wraps.
  int64_t (*requant_static_columns)(const int64_t* p, int64_t n, int64_t row_m, int64_t row_k,
                                    const int64_t* s_m, const int64_t* s_k, int8_t* y) = nullptr;
};

// The table of one instruction set's file, whose functions (in its anonymous namespace) carry
// the entries' names: one list of entries for every level.
#define DV_ROW_KERNEL_TABLE(level)                                                          \
  RowKernels {                                                                              \
    .isa = level, .max_abs_i64 = &MaxAbsI64, .max_abs_i32 = &MaxAbsI32,                     \
    .quantize_i8 = &QuantizeI8, .mul_columns_max_abs = &MulColumnsMaxAbs,                   \
    .requant_i32 = &RequantI32, .round_shift_max_abs = &RoundShiftMaxAbs,                   \
    .norm_sum_squares = &NormSumSquares, .norm_divide = &NormDivide,                        \
    .residual_max_abs = &ResidualMaxAbs, .residual_write = &ResidualWrite,                  \
    .mul_i32_i64 = &MulI32I64, .mul_i64_i64 = &MulI64I64, .rope = &Rope, .swiglu = &Swiglu, \
    .softmax_exps = &SoftmaxExps, .softmax_normalize = &SoftmaxNormalize,                   \
    .requant_static = &RequantStatic, .greedy_pick = &GreedyPick,                           \
    .requant_static_columns = &RequantStaticColumns,                                        \
  }

// The table of one ISA level; the caller checks CpuSupports(isa) first. neon and neondot share
// the NEON table (their difference is the GEMM's SDOT).
const RowKernels& RowKernelsFor(CpuIsa isa);
const RowKernels* RowKernelsScalar();
const RowKernels* RowKernelsAvx2();    // x86-64 builds only
const RowKernels* RowKernelsAvx512();  // x86-64 builds only
const RowKernels* RowKernelsNeon();    // aarch64 builds only

}  // namespace dv
