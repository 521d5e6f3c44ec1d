// Compiled with -ffp-contract=off -fno-math-errno (prepare/CMakeLists.txt): the error-free
// transformations below (TwoSum, Dekker's TwoProduct) are exact only if no multiply-add is fused,
// and every sqrt must be the instruction, not a libm call that may set errno.
#include "prepare/portable_math.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

namespace dv::pmath {
namespace {

// ---- double-double arithmetic (hi + lo, |lo| <= ulp(hi)/2), FMA-free ---------------------------

struct DD {
  double hi, lo;
};

DD TwoSum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

DD QuickTwoSum(double a, double b) {  // |a| >= |b|
  const double s = a + b;
  return {s, b - (s - a)};
}

// Veltkamp's split: a = hi + lo with hi and lo of at most 26 significant bits each.
void Split(double a, double& hi, double& lo) {
  const double t = 134217729.0 * a;  // 2^27 + 1
  hi = t - (t - a);
  lo = a - hi;
}

// Dekker's product: a * b = p + e exactly (no FMA needed).
DD TwoProd(double a, double b) {
  const double p = a * b;
  double ah = 0, al = 0, bh = 0, bl = 0;
  Split(a, ah, al);
  Split(b, bh, bl);
  return {p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
}

DD Add(DD a, DD b) {
  DD s = TwoSum(a.hi, b.hi);
  const DD t = TwoSum(a.lo, b.lo);
  s.lo += t.hi;
  s = QuickTwoSum(s.hi, s.lo);
  s.lo += t.lo;
  return QuickTwoSum(s.hi, s.lo);
}

DD Add(DD a, double b) {
  DD s = TwoSum(a.hi, b);
  s.lo += a.lo;
  return QuickTwoSum(s.hi, s.lo);
}

DD Neg(DD a) { return {-a.hi, -a.lo}; }

DD Mul(DD a, DD b) {
  DD p = TwoProd(a.hi, b.hi);
  p.lo += a.hi * b.lo + a.lo * b.hi;
  return QuickTwoSum(p.hi, p.lo);
}

DD Mul(DD a, double b) {
  DD p = TwoProd(a.hi, b);
  p.lo += a.lo * b;
  return QuickTwoSum(p.hi, p.lo);
}

DD Div(DD a, DD b) {
  const double q1 = a.hi / b.hi;
  DD r = Add(a, Neg(Mul(b, q1)));
  const double q2 = r.hi / b.hi;
  r = Add(r, Neg(Mul(b, q2)));
  const double q3 = r.hi / b.hi;
  return Add(QuickTwoSum(q1, q2), q3);
}

DD Div(DD a, double b) { return Div(a, DD{b, 0.0}); }

// ---- constants (from mpmath at 300 bits) -------------------------------------------------------

constexpr DD kLn2 = {0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56};
constexpr double kLn2Tail = 0x1.7b57a079a1934p-111;  // ln 2 - kLn2.hi - kLn2.lo
constexpr double kPio2[3] = {0x1.921fb54442d18p+0, 0x1.1a62633145c07p-54,
                             -0x1.f1976b7ed8fbcp-110};  // pi/2 = sum, to 2^-163
constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
constexpr double kLog2e = 0x1.71547652b82fep+0;
// ln 2 for the fast Exp (Cody and Waite): the head has 21 significant bits, so n * head is exact
// for |n| < 2^32.
constexpr double kLn2Head = 0x1.62e42p-1;
constexpr double kLn2Rest = 0x1.fdf473de6af28p-22;
constexpr double kTwo52 = 0x1p52;

double PowerOf2(int64_t n) {  // 2^n for -1022 <= n <= 1023
  return std::bit_cast<double>(static_cast<uint64_t>(n + 1023) << 52);
}

// The reciprocal factorials 1/k! for k = 0..31 in double-double, made once with exact divisions.
struct Factorials {
  DD inv[32];
  Factorials() {
    inv[0] = {1.0, 0.0};
    for (int k = 1; k < 32; ++k) inv[k] = Div(inv[k - 1], static_cast<double>(k));
  }
};
const Factorials& InvFactorials() {
  static const Factorials f;
  return f;
}

// 1/(2i + 1) for i = 0..21 in double-double.
struct OddReciprocals {
  DD inv[22];
  OddReciprocals() {
    for (int i = 0; i < 22; ++i) inv[i] = Div(DD{1.0, 0.0}, static_cast<double>(2 * i + 1));
  }
};
const OddReciprocals& InvOdd() {
  static const OddReciprocals r;
  return r;
}

// e^r - 1 for |r| <= 0.35 in double-double: r / 2^10 by Taylor, then 10 squarings of 1 + u
// carried as u (2u + u^2), which keeps the small part exact enough.
DD Expm1Reduced(DD r) {
  const Factorials& f = InvFactorials();
  const DD x = {r.hi * 0x1p-10, r.lo * 0x1p-10};  // |x| <= 3.5e-4
  // Taylor to x^10 / 10!: the remainder is below 2^-118.
  DD p = f.inv[10];
  for (int k = 9; k >= 1; --k) p = Add(Mul(p, x), f.inv[k]);
  DD u = Mul(p, x);
  for (int i = 0; i < 10; ++i) u = Add(Mul(u, 2.0), Mul(u, u));
  return u;
}

// e^z in double-double for |z| < 700.
DD ExpDD(DD z) {
  const double n = RoundHalfEven(z.hi * kLog2e);
  // r = z - n ln2, with n * ln2 carried in three parts (the first two exact products).
  DD r = Add(z, Neg(TwoProd(n, kLn2.hi)));
  r = Add(r, Neg(TwoProd(n, kLn2.lo)));
  r = Add(r, -(n * kLn2Tail));
  const DD e = Add(Expm1Reduced(r), 1.0);
  const double scale = ScaleByPowerOf2(1.0, static_cast<int64_t>(n));
  return {e.hi * scale, e.lo * scale};
}

// log(x) in double-double for finite x > 0: x = 2^e f with f in [sqrt(1/2), sqrt(2)),
// log f = 2 atanh(s), s = (f - 1) / (f + 1), |s| <= 0.172, by its series to s^43.
DD LogDD(double x) {
  int64_t e = 0;
  uint64_t bits = std::bit_cast<uint64_t>(x);
  if ((bits >> 52) == 0) {  // subnormal: make it normal first
    x *= 0x1p54;
    e -= 54;
    bits = std::bit_cast<uint64_t>(x);
  }
  e += static_cast<int64_t>(bits >> 52) - 1023;
  double f = std::bit_cast<double>((bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1023} << 52));
  if (f > 1.4142135623730951) {
    f *= 0.5;  // exact
    e += 1;
  }
  const DD s = Div(TwoSum(f, -1.0), TwoSum(f, 1.0));
  const DD s2 = Mul(s, s);
  const OddReciprocals& inv = InvOdd();
  DD sum = inv.inv[21];  // 1/43
  for (int i = 20; i >= 0; --i) sum = Add(Mul(sum, s2), inv.inv[i]);
  const DD log_f = Mul(Mul(sum, s), 2.0);
  const double de = static_cast<double>(e);
  return Add(Add(TwoProd(de, kLn2.hi), Mul(DD{kLn2.lo, 0.0}, de)), log_f);
}

// sin r and cos r for |r| <= pi/4 (+ a little) in double-double, by Taylor to r^29 and r^28
// (remainders below 2^-110).
void CosSinReduced(DD r, DD& c, DD& s) {
  const Factorials& f = InvFactorials();
  const DD r2 = Mul(r, r);
  DD ps = f.inv[29];
  for (int k = 27; k >= 1; k -= 2) {
    ps = Mul(ps, r2);
    ps = ((k / 2) % 2 == 0) ? Add(ps, f.inv[k]) : Add(ps, Neg(f.inv[k]));
  }
  s = Mul(ps, r);  // r (1 - r^2/3! + r^4/5! - ...)
  DD pc = f.inv[28];
  for (int k = 26; k >= 0; k -= 2) {
    pc = Mul(pc, r2);
    pc = ((k / 2) % 2 == 0) ? Add(pc, f.inv[k]) : Add(pc, Neg(f.inv[k]));
  }
  c = pc;
}

}  // namespace

double RoundHalfEven(double x) {
  // Adding and subtracting 2^52 rounds |x| < 2^52 to an integer in the current rounding mode
  // (to nearest, ties to even); larger magnitudes are integers already.
  const bool negative = (std::bit_cast<uint64_t>(x) >> 63) != 0;  // -0.0 too
  const double a = negative ? -x : x;
  if (!(a < kTwo52)) return x;  // also NaN
  const double r = (a + kTwo52) - kTwo52;
  return negative ? -r : r;
}

double Floor(double x) {
  const double r = RoundHalfEven(x);
  return r > x ? r - 1.0 : r;
}

double Sqrt(double x) { return __builtin_sqrt(x); }

double ScaleByPowerOf2(double x, int64_t n) {
  if (n > 1023) {
    if (n > 2000) n = 2000;  // overflows for any normal x
    return (x * PowerOf2(1000)) * PowerOf2(n - 1000);
  }
  if (n < -1022) {
    if (n < -2000) return x * 0.0;
    // One rounding at most: the first product stays normal (exact), the second may be
    // subnormal and rounds once.
    return (x * PowerOf2(n + 1000)) * PowerOf2(-1000);
  }
  return x * PowerOf2(n);
}

double Exp(double x) {
  if (x != x) return x;
  if (x > 709.782712893384) return std::numeric_limits<double>::infinity();
  if (x < -745.2) return 0.0;
  const double n = RoundHalfEven(x * kLog2e);
  // r = x - n ln2 as r_hi + r_lo: n * kLn2Head is exact (21-bit head, |n| < 2^11) and so is the
  // subtraction (Sterbenz); n * kLn2Rest is split exactly by TwoProd.
  const double a = x - n * kLn2Head;
  const DD nr = TwoProd(n, kLn2Rest);
  const double r_hi = a - nr.hi;
  const double r_lo = ((a - r_hi) - nr.hi) - nr.lo;  // |r_hi| <= 0.3466
  // e^r = 1 + r + r^2/2 + r^3/6 + r^4 (1/24 + r/120 + ... + r^12/16!), the Taylor remainder
  // |r|^17/17! below 2^-74. 1 + r_hi + r_hi^2/2 + r_hi^3/6 is summed in double-double (the
  // products exact by TwoProd); what is left -- the quartic part (<= 6e-4), r_lo's effect
  // e^(r_hi) (e^(r_lo) - 1) ~ r_lo e^(r_hi), the square's low half -- is small enough that its
  // roundings stay near 2^-60 of the result.
  double q = 1.0 / 355687428096000.0;  // 1/16!
  for (int k = 15; k >= 4; --k) q = q * r_hi + InvFactorials().inv[k].hi;
  const DD sq = TwoProd(r_hi, r_hi);
  const DD cube = Div(TwoProd(sq.hi, r_hi), 6.0);
  DD sum = TwoSum(1.0, r_hi);
  sum = Add(sum, sq.hi * 0.5);
  sum = Add(sum, cube);
  const double small = (r_lo * sum.hi + sq.lo * (0.5 + r_hi / 6.0)) + (sq.hi * sq.hi) * q;
  const double e = sum.hi + (sum.lo + small);
  return ScaleByPowerOf2(e, static_cast<int64_t>(n));
}

void CosSinDoubleDouble(double x, double& cos_hi, double& cos_lo, double& sin_hi, double& sin_lo) {
  const double n = RoundHalfEven(x * kTwoOverPi);
  // r = x - n pi/2 in double-double: n * pi/2's first two parts are exact products.
  DD r = Add(DD{x, 0.0}, Neg(TwoProd(n, kPio2[0])));
  r = Add(r, Neg(TwoProd(n, kPio2[1])));
  r = Add(r, -(n * kPio2[2]));
  DD c{}, s{};
  CosSinReduced(r, c, s);
  const int64_t q = static_cast<int64_t>(n) & 3;  // two's complement: n mod 4 for negative n too
  DD rc{}, rs{};
  switch (q) {
    case 0:
      rc = c, rs = s;
      break;
    case 1:
      rc = Neg(s), rs = c;
      break;
    case 2:
      rc = Neg(c), rs = Neg(s);
      break;
    default:
      rc = s, rs = Neg(c);
      break;
  }
  cos_hi = rc.hi, cos_lo = rc.lo, sin_hi = rs.hi, sin_lo = rs.lo;
}

void CosSin(double x, double& cos_x, double& sin_x) {
  double clo = 0, slo = 0;
  CosSinDoubleDouble(x, cos_x, clo, sin_x, slo);
}

double Ulp(double x) {
  const uint64_t bits = std::bit_cast<uint64_t>(x) & ~(uint64_t{1} << 63);
  const int64_t e = std::max<int64_t>(1, static_cast<int64_t>(bits >> 52));  // biased exponent
  if (e - 1075 >= -1022) return PowerOf2(e - 1075);
  return std::bit_cast<double>(uint64_t{1} << (e - 1));  // a subnormal ulp, 2^(e - 1075)
}

double PowTensorScalar(double x, double y) {
  // torch's pow(tensor, scalar) evaluates these exponents without pow (ATen's
  // pow_tensor_scalar_optimized_kernel); DetLLM's alpha 0.5 smoothing goes through the sqrt.
  if (y == 0.5) return Sqrt(x);
  if (y == -0.5) return 1.0 / Sqrt(x);
  if (y == 2.0) return x * x;
  if (y == 3.0) return x * x * x;
  if (y == -1.0) return 1.0 / x;
  if (y == -2.0) return 1.0 / (x * x);
  return Pow(x, y);
}

double Pow(double x, double y) {
  if (y == 1.0) return x;  // exact cases
  if (y == 0.0) return 1.0;
  const DD z = Mul(LogDD(x), y);
  if (z.hi > 709.0 || z.hi < -744.0) return Exp(z.hi);  // overflow or (sub)underflow region
  const DD e = ExpDD(z);
  return e.hi + e.lo;
}

int64_t FloorLog2(double x) {
  // log2 x = e + log2 f with f in [1, 2). The correctly rounded log2 is e + 1 only when f is so
  // close to 2 that e + log2 f rounds up: with f < 2 - 2^-40, e + log2 f stays more than 2^-41
  // below e + 1, farther than half an ulp of any |e + 1| <= 1100. Otherwise decide with the
  // double-double logarithm.
  uint64_t bits = std::bit_cast<uint64_t>(x);
  int64_t e = 0;
  if ((bits >> 52) == 0) {
    bits = std::bit_cast<uint64_t>(x * 0x1p54);
    e = -54;
  }
  e += static_cast<int64_t>(bits >> 52) - 1023;
  const double f =
      std::bit_cast<double>((bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1023} << 52));
  if (f < 2.0 - 0x1p-40) return e;
  const DD l = Div(LogDD(x), kLn2);
  return static_cast<int64_t>(Floor(l.hi + l.lo));
}

}  // namespace dv::pmath
