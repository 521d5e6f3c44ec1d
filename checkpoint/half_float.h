// IEEE binary16 (F16) and bfloat16 (BF16) <-> binary32, bit-exact and host-independent.
// Widening is exact for every input (subnormals, infinities and NaNs included); narrowing rounds
// to nearest, ties to even, as torch's c10::BFloat16 and c10::Half (and a GPU's cvt.rn) do.
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

// Round to nearest binary16, ties to even, in integer arithmetic (no dependence on the host's
// rounding mode): beyond 65520 (half-way past the largest finite value, 65504) to infinity,
// below 2^-14 to a subnormal or zero; NaN stays a quiet NaN.
inline uint16_t FloatToF16Bits(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520
  if (magnitude >= 0x38800000u) {
    // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits; a carry
    // out of the mantissa correctly moves to the next exponent.
    const uint32_t rounded = magnitude - (112u << 23) + 0xfffu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  // Subnormal or zero: the value in units of 2^-24 is (1.m) * 2^(e - 127 + 24); shift the full
  // significand right and round half to even (a result of 0x400 is the smallest normal).
  const int exponent = static_cast<int>(magnitude >> 23);
  const int shift = 126 - exponent;  // 14 - (e - 112): at least 14 bits are dropped
  if (shift > 24) return sign;       // below 2^-25: rounds to zero
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t kept = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t up = rest > half || (rest == half && (kept & 1u)) ? 1u : 0u;
  return static_cast<uint16_t>(sign | (kept + up));
}

// f rounded to the nearest binary16 value, as a float.
inline float RoundToF16(float f) { return F16BitsToFloat(FloatToF16Bits(f)); }

}  // namespace dv
