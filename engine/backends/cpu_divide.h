// Exact division by a divisor that is fixed for a whole row (a row maximum, an RMS, a softmax
// denominator, DI-Exp's tpos, a static cache scale): one 64x64->128-bit multiply and a shift per
// element instead of a hardware divide. Never approximate: the quotient is floor(n / d) for
// every n in [0, 2^63), and values outside that range fall back to the plain definition.
//
// Method (round-up multiply-shift, Granlund & Montgomery 1994, Thm 4.2): for d >= 2 let
// l = ceil(log2 d) and m = ceil(2^(63+l) / d). Then m < 2^64 and, writing m*d = 2^(63+l) + e
// with 0 <= e < d <= 2^l, for 0 <= n < 2^63:
//   n*m / 2^(63+l) = n/d + n*e / (d * 2^(63+l)),  and  0 <= n*e / (d * 2^(63+l)) < 1/d,
// so with n = q*d + r (0 <= r <= d-1) the left side lies in [q, q + (d-1)/d + 1/d) = [q, q+1)
// and its floor is q. The floor is taken as (high 64 bits of n*m) >> (l - 1). d = 1 returns n.
// tests/cpu_backend/cpu_divide_test.cc checks edges (d = 1, 2^k, 2^k +- 1, 2^63, 2^64 - 1;
// n = 0, d - 1, d, 2^63 - 1) and random pairs against the hardware quotient.
#pragma once

#include <cstdint>

#include "engine/backends/row_kernels_cpu.h"
#include "engine/intmath.h"

namespace dv {

class RowDivisor {
  __extension__ typedef unsigned __int128 U128;  // GCC/Clang; __extension__: no -Wpedantic

 public:
  // d >= 1 (d == 0 is an invariant violation at every call site; it is treated as 1).
  explicit RowDivisor(uint64_t d) {
    p_.divisor = d == 0 ? 1 : d;
    if (p_.divisor == 1) return;
    const int l = 64 - __builtin_clzll(p_.divisor - 1);  // ceil(log2 d), 1..64
    const U128 one = 1;
    p_.magic = static_cast<uint64_t>(((one << (63 + l)) + p_.divisor - 1) / p_.divisor);
    p_.shift = l - 1;
  }
  explicit RowDivisor(const RowDivisorParams& p) : p_(p) {}

  uint64_t divisor() const { return p_.divisor; }
  const RowDivisorParams& params() const { return p_; }

  // floor(n / d) for 0 <= n < 2^63.
  uint64_t Quotient(uint64_t n) const {
    if (p_.magic == 0) return n;
    const auto hi = static_cast<uint64_t>((static_cast<U128>(n) * p_.magic) >> 64);
    return hi >> p_.shift;
  }

  // RoundHalfAwayDiv(a, d) (docs/SPEC.md §2.4) for every int64 a, d < 2^63: the same formula
  // with the floor division done by Quotient when its dividend is non-negative.
  int64_t RoundHalfAwayDiv(int64_t a) const {
    const auto d = static_cast<int64_t>(p_.divisor);
    const int64_t num = WrapAdd(WrapAbs(a), d >> 1);  // FloorDiv(d, 2) == d >> 1 for d >= 1
    const int64_t q =
        num >= 0 ? static_cast<int64_t>(Quotient(static_cast<uint64_t>(num))) : FloorDiv(num, d);
    return a < 0 ? WrapNeg(q) : q;
  }

 private:
  RowDivisorParams p_;  // magic == 0: d == 1
};

// The rounding shift rsr(., k) in the form the kernels take (row_kernels_cpu.h).
inline RoundShift MakeRoundShift(int64_t k) { return {k, k == 0 ? 0 : ShiftLeftWrap(1, k - 1)}; }

}  // namespace dv
