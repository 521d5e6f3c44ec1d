// IEEE binary16 (F16) and bfloat16 (BF16) <-> binary32, bit-exact and host-independent.
// Widening is exact for every input (subnormals, infinities and NaNs included); narrowing to
// bfloat16 rounds to nearest, ties to even, as torch's c10::BFloat16 does.
#pragma once

#include <bit>
#include <cstdint>

namespace dv {

inline float Bf16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

inline float F16BitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits = 0;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // infinity or NaN (payload kept)
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 -> 127
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal (mantissa * 2^-24): shift the leading one into the implicit bit.
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// Round to nearest bfloat16, ties to even; NaN stays a (quiet) NaN.
inline uint16_t FloatToBf16Bits(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// f rounded to the nearest bfloat16 value, as a float.
inline float RoundToBf16(float f) { return Bf16BitsToFloat(FloatToBf16Bits(f)); }

}  // namespace dv
