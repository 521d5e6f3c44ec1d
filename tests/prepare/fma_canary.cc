// Planted for prepare_object_code_test: what the test must find if it ever crept into dv_prepare,
// built with -mfma -ffp-contract=fast as its own library (x86-64 only), linked into nothing.
#include <cmath>

extern "C" {

// Contracted into a fused multiply-add (vfmadd...sd).
double DvPrepareCanaryFma(double a, double b, double c) { return a * b + c; }

// A math-library call no compiler inlines.
double DvPrepareCanaryExp(double a) { return std::exp(a); }

}  // extern "C"
