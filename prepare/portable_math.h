// Elementary functions in float64 built only from IEEE-754 operations that are exact by
// definition (+, -, *, / and sqrt, each correctly rounded to nearest-even), so every machine that
// implements IEEE binary64 -- x86-64 at any SIMD level, aarch64, big-endian s390x -- returns the
// same bits for the same input. No libm call, no fused multiply-add: this file and its users are
// compiled with -ffp-contract=off and -fno-math-errno, and tests/prepare checks the object code
// for FMA instructions and libm symbols. The default rounding mode (to nearest, ties to even) is
// assumed, as every C++ program starts with.
//
// Accuracy (tests/prepare/portable_math_test.cc, against the C library's long double functions:
// x86-64's 64-bit significands, IEEE quad on aarch64 and s390x; worst samples checked against
// mpmath):
//   Exp       1 + r + r^2/2 + r^3/6 in double-double after a Cody-Waite reduction: correctly
//             rounded except within about 2^-61 of a tie (bound checked: 0.504 ulp; measured
//             0.5008). Results below 2^-1022 are rounded twice (the scaling rounds again).
//   CosSin    computed in double-double: |cos - exact| and |sin - exact| < 2^-70 for |x| < 2^30
//             before the final rounding, so correctly rounded except within 2^-70 of a tie
//             (checked: 0.501 ulp; measured 0.5000 over RoPE's angles).
//   Pow       exp(y log x) in double-double, rounded once: correctly rounded except within
//             2^-90 relative of a tie (checked: 0.501 ulp; measured 0.5000). glibc's pow, which
//             torch's default CPU path calls, is correctly rounded too; the SLEEF path of torch on
//             AVX2/AVX-512 is not for ~1.6% of inputs. PowTensorScalar is torch's
//             tensor.pow(scalar): y = 0.5, -0.5, 2, 3, -1, -2 by sqrt, products and
//             reciprocals (DetLLM's alpha 0.5 smoothing relies on it), else Pow.
//   FloorLog2 floor(log2 x) of the correctly rounded log2, exactly (what Python's math.log2 and
//             torch.log2 give wherever they round correctly): just below 2^e the rounded log2
//             may be e itself.
#pragma once

#include <cstdint>

namespace dv::pmath {

// Rounds to the nearest integer, ties to even (torch.round, Python's round, IEEE
// roundToIntegralTiesToEven). NaN and infinities are returned unchanged.
double RoundHalfEven(double x);
// The largest integer <= x (x finite).
double Floor(double x);
// The correctly rounded square root (the IEEE operation).
double Sqrt(double x);
// e^x; 0 below -745.2, +inf above 709.79, NaN for NaN.
double Exp(double x);
// cos x and sin x (x finite, |x| < 2^30).
void CosSin(double x, double& cos_x, double& sin_x);
// The same before the final rounding: cos x = cos_hi + cos_lo, sin x = sin_hi + sin_lo with the
// accuracy stated above (for measuring how close a value lies to a rounding boundary).
void CosSinDoubleDouble(double x, double& cos_hi, double& cos_lo, double& sin_hi, double& sin_lo);
// x^y for x > 0 finite and y finite, correctly rounded as stated above (theta^(-2j/d), which
// torch computes as pow(scalar, tensor) with no special exponents).
double Pow(double x, double y);
// torch's tensor.pow(scalar) for x > 0: the special exponents above, else Pow (max^alpha).
double PowTensorScalar(double x, double y);
// floor(log2(x)) for finite x > 0.
int64_t FloorLog2(double x);
// The distance between |x| and the next larger double (x finite, nonzero): 2^(e - 52).
double Ulp(double x);
// x * 2^n, exact unless the result is subnormal (then rounded once) or out of range.
double ScaleByPowerOf2(double x, int64_t n);

}  // namespace dv::pmath
