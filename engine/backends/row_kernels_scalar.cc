// The scalar element loops of the cpu row operations (row_kernels_cpu.h): the spec's formulas,
// one element at a time, with RowDivisor doing each division by the row's divisor.
#include "engine/backends/cpu_divide.h"
#include "engine/backends/row_kernels_cpu.h"
#include "engine/dyadic.h"
#include "engine/intmath.h"
#include "engine/ops/di_exp.h"
#include "engine/ops/di_swiglu.h"
#include "engine/ops/rope.h"

namespace dv {
namespace {

inline int64_t Rsr(int64_t v, RoundShift sh) {
  return ShiftRightArith(WrapAdd(v, sh.addend), sh.count);
}

int64_t MaxAbsI64(const int64_t* x, int64_t n) {
  int64_t a = 1;
  for (int64_t i = 0; i < n; ++i) a = Max(a, WrapAbs(x[i]));
  return a;
}

int64_t MaxAbsI32(const int32_t* x, int64_t n) {
  int64_t a = 0;
  for (int64_t i = 0; i < n; ++i) a = Max(a, WrapAbs(x[i]));
  return a;
}

int64_t QuantizeI8(const int64_t* x, int64_t n, const RowDivisorParams& p, int8_t* y) {
  const RowDivisor div(p);
  for (int64_t i = 0; i < n; ++i) y[i] = SaturateToInt8(div.RoundHalfAwayDiv(WrapMul(x[i], 127)));
  return n;
}

int64_t MulColumnsMaxAbs(const int32_t* p, const int64_t* col_m, int64_t n, int64_t* s,
                         bool* narrow) {
  if (narrow != nullptr) *narrow = false;  // (RequantI32 takes one product either way)
  int64_t a = 1;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = WrapMul(p[i], col_m[i]);
    if (s != nullptr) s[i] = v;
    a = Max(a, WrapAbs(v));
  }
  return a;
}

void RequantI32(const int32_t* p, const int64_t* col_m, int64_t n, RoundShift sh,
                bool /*narrow*/, int32_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int32_t>(Rsr(WrapMul(p[i], col_m[i]), sh));
}

int64_t RoundShiftMaxAbs(int64_t* s, int64_t n, RoundShift sh) {
  int64_t a = 1;
  for (int64_t i = 0; i < n; ++i) {
    s[i] = Rsr(s[i], sh);
    a = Max(a, WrapAbs(s[i]));
  }
  return a;
}

int64_t NormSumSquares(const int32_t* x, int64_t n, RoundShift down, int64_t up) {
  int64_t ssum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t xp = ShiftLeftWrap(Rsr(x[i], down), up);
    ssum = WrapAdd(ssum, WrapMul(xp, xp));
  }
  return ssum;
}

int64_t NormDivide(const int32_t* x, int64_t n, RoundShift down, int64_t up,
                   const RowDivisorParams& p, const int64_t* gamma, int32_t* y32, int64_t* y64) {
  const RowDivisor div(p);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t xp = ShiftLeftWrap(Rsr(x[i], down), up);
    const auto v = static_cast<int32_t>(div.RoundHalfAwayDiv(ShiftLeftWrap(xp, 20)));
    if (gamma == nullptr) {
      y32[i] = v;
    } else {
      y64[i] = WrapMul(v, gamma[i]);
    }
  }
  return n;
}

inline int64_t ResidualValue(int32_t h, int32_t d, int64_t dm, RoundShift down, int64_t up) {
  return WrapAdd(h, ShiftLeftWrap(Rsr(WrapMul(d, dm), down), up));
}

int64_t ResidualMaxAbs(const int32_t* h, const int32_t* d, int64_t n, int64_t dm, RoundShift down,
                       int64_t up) {
  int64_t g = 0;
  for (int64_t i = 0; i < n; ++i) g = Max(g, WrapAbs(ResidualValue(h[i], d[i], dm, down, up)));
  return g;
}

void ResidualWrite(int32_t* h, const int32_t* d, int64_t n, int64_t dm, RoundShift down, int64_t up,
                   RoundShift down2, int64_t up2) {
  for (int64_t i = 0; i < n; ++i) {
    h[i] = static_cast<int32_t>(
        ShiftLeftWrap(Rsr(ResidualValue(h[i], d[i], dm, down, up), down2), up2));
  }
}

void MulI32I64(const int32_t* x, const int64_t* m, int64_t n, int64_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = WrapMul(x[i], m[i]);
}

void MulI64I64(const int64_t* x, const int64_t* m, int64_t n, int64_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = WrapMul(x[i], m[i]);
}

void Rope(int64_t* x, int64_t d, const int16_t* cos_row, const int16_t* sin_row) {
  ApplyIntRope(x, d, cos_row, sin_row);
}

// DiExp(x, tpos) for x <= 0, q = floor(-x / tpos) by the row divisor (x > INT64_MIN).
inline int64_t DiExpWith(int64_t x, int64_t tpos, const RowDivisor& tpos_div) {
  const auto q = static_cast<int64_t>(tpos_div.Quotient(static_cast<uint64_t>(-x)));
  const int64_t r = WrapAdd(x, WrapMul(q, tpos));  // x - q * (-tpos), in (-tpos, 0]
  return ShiftRightArith(WrapAdd(ShiftRightArith(r, 1), tpos), Min(q, 62));
}

void Swiglu(const int32_t* gate, const int32_t* up, int64_t n, int64_t tpos,
            const RowDivisorParams& p, int64_t* y) {
  // With 1 <= tpos < 2^55 every sigmoid operand is small and non-negative: E in [0, tpos],
  // num << 7 < 2^62, den = tpos + E in [1, 2^56), so rhad(num << 7, den) is one unsigned
  // division of num * 128 + den / 2.
  const RowDivisor tpos_div(p);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t g = gate[i];
    const int64_t e = DiExpWith(-(g < 0 ? -g : g), tpos, tpos_div);
    const auto den = static_cast<uint64_t>(tpos + e);
    const auto num = static_cast<uint64_t>(g >= 0 ? tpos : e);
    const auto sigma = static_cast<int64_t>(((num << kSigmoidFracBits) + den / 2) / den);
    y[i] = WrapMul(WrapMul(g, sigma), up[i]);
  }
}

int64_t SoftmaxExps(const int32_t* scores, int64_t n, int32_t row_max, int64_t tpos,
                    const RowDivisorParams& p, int64_t* exps) {
  const RowDivisor tpos_div(p);
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    exps[i] = DiExpWith(int64_t{scores[i]} - row_max, tpos, tpos_div);
    sum += exps[i];
  }
  return sum;
}

int64_t SoftmaxNormalize(const int64_t* exps, int64_t n, const RowDivisorParams& p,
                         int32_t* probs) {
  const RowDivisor div(p);
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t e14 = static_cast<uint64_t>(exps[i]) << 14;
    probs[i] = static_cast<int32_t>(div.Quotient(e14 + (p.divisor >> 1)));
    sum += probs[i];
  }
  return sum;
}

int64_t RequantStatic(const int32_t* p, const int64_t* col_m, int64_t n, int64_t row_m, int64_t up,
                      const RowDivisorParams& params, int8_t* y) {
  const RowDivisor div(params);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t num = WrapMul(WrapMul(p[i], col_m[i]), row_m);
    y[i] = SaturateToInt8(div.RoundHalfAwayDiv(ShiftLeftWrap(num, up)));
  }
  return n;
}

int64_t GreedyPick(const int32_t* logits, const int64_t* head_m, int64_t n) {
  int64_t best = kInt64Min, best_id = 0;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t scaled = WrapMul(logits[v], head_m[v]);
    if (scaled > best) {
      best = scaled;
      best_id = v;
    }
  }
  return best_id;
}

int64_t RequantStaticColumns(const int64_t* p, int64_t n, int64_t row_m, int64_t row_k,
                             const int64_t* s_m, const int64_t* s_k, int8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = RequantI8Static(p[i], row_m, row_k, 1, 0, s_m[i], s_k[i]);
  return n;
}

constexpr RowKernels kScalarRowKernels = DV_ROW_KERNEL_TABLE(CpuIsa::kScalar);

}  // namespace

const RowKernels* RowKernelsScalar() { return &kScalarRowKernels; }

const RowKernels& RowKernelsFor(CpuIsa isa) {
#if defined(DV_CPU_X86_KERNELS)
  // The AMX level's row operations are AVX-512's: the tiles only multiply matrices.
  if (isa == CpuIsa::kAvx512Vnni || isa == CpuIsa::kAmx) return *RowKernelsAvx512();
  if (isa == CpuIsa::kAvx2) return *RowKernelsAvx2();
#elif defined(DV_CPU_NEON_KERNELS)
  if (isa == CpuIsa::kNeon || isa == CpuIsa::kNeonDot) return *RowKernelsNeon();
#else
  (void)isa;
#endif
  return *RowKernelsScalar();
}

}  // namespace dv
