// Planted floating-point device code for the float-leak guard's self-test of device code
// (FloatGuardDeviceCanary): built for the same GPU architectures as the cuda backend, linked into
// nothing. The SASS and PTX scans must report every item below.
#include <cstdint>

// FP32 fused multiply-add (FFMA; fma.rn.f32), an int -> float conversion (I2F;
// cvt.rn.f32.s32), the special-function unit (MUFU.EX2; ex2.approx.f32) and an FP64 multiply
// (DMUL; mul.rn.f64).
__global__ void DvCanaryDeviceKernel(const float* a, const int32_t* b, double* c, float* out) {
  const unsigned i = threadIdx.x;
  const float x = a[i] * a[i + 1] + a[i + 2];
  const float y = static_cast<float>(b[i]);
  out[i] = exp2f(x) + y;
  c[i] = c[i] * c[i + 1];
}
