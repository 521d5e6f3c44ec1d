// Planted floating-point code for the float-leak guard's self-test (test_float_guard): built with
// the project's flags as its own static library, linked into nothing. The guard must report
// every item below; the functions have C linkage so the test can name them.
#include <cmath>
#include <cstdint>

extern "C" {

// A double multiply: mulsd (vmulsd with AVX).
double DvCanaryDoubleMultiply(double a, double b) { return a * b; }

// A sqrt call: sqrtsd, plus a call to libm's sqrt for the errno path (-fmath-errno, the default).
double DvCanarySqrtCall(double a) { return std::sqrt(a); }

// An int -> double conversion: cvtsi2sd.
double DvCanaryIntToDouble(int64_t a) { return static_cast<double>(a); }

// x87 arithmetic: long double is the 80-bit x87 type on x86-64.
long double DvCanaryX87Multiply(long double a, long double b) { return a * b; }

// A math-library call no compiler inlines: exp.
double DvCanaryExpCall(double a) { return std::exp(a); }

}  // extern "C"
