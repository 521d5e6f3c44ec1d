#include "gguf/dequantize.h"

#include <bit>
#include <cstdio>
#include <cstdlib>

namespace dv::gguf {
namespace {

// A broken precondition is a bug in the caller, not bad input: abort with the values.
void Require(bool ok, const char* what, size_t a, size_t b) {
  if (ok) return;
  std::fprintf(stderr, "%s:%d: DequantizeRow precondition failed: %s (%zu, %zu)\n", __FILE__,
               __LINE__, what, a, b);
  std::abort();
}

uint16_t Le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

uint32_t Le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

constexpr size_t kBlock = 32;  // Q8_0, Q4_0, Q4_1

void DequantizeQ8_0(std::span<const uint8_t> bytes, std::span<float> out) {
  for (size_t b = 0; b < out.size() / kBlock; ++b) {
    const uint8_t* block = bytes.data() + b * 34;
    const float d = HalfToFloat(Le16(block));
    for (size_t j = 0; j < kBlock; ++j) {
      const auto q = static_cast<int8_t>(block[2 + j]);
      out[b * kBlock + j] = static_cast<float>(q) * d;
    }
  }
}

void DequantizeQ4_0(std::span<const uint8_t> bytes, std::span<float> out) {
  for (size_t b = 0; b < out.size() / kBlock; ++b) {
    const uint8_t* block = bytes.data() + b * 18;
    const float d = HalfToFloat(Le16(block));
    for (size_t j = 0; j < kBlock / 2; ++j) {
      const int lo = (block[2 + j] & 0x0F) - 8;
      const int hi = (block[2 + j] >> 4) - 8;
      out[b * kBlock + j] = static_cast<float>(lo) * d;
      out[b * kBlock + j + kBlock / 2] = static_cast<float>(hi) * d;
    }
  }
}

void DequantizeQ4_1(std::span<const uint8_t> bytes, std::span<float> out) {
  for (size_t b = 0; b < out.size() / kBlock; ++b) {
    const uint8_t* block = bytes.data() + b * 20;
    const float d = HalfToFloat(Le16(block));
    const float m = HalfToFloat(Le16(block + 2));
    for (size_t j = 0; j < kBlock / 2; ++j) {
      const int lo = block[4 + j] & 0x0F;
      const int hi = block[4 + j] >> 4;
      // The products are exact; only the sum rounds (see dequantize.h).
      const float lo_scaled = static_cast<float>(lo) * d;
      const float hi_scaled = static_cast<float>(hi) * d;
      out[b * kBlock + j] = lo_scaled + m;
      out[b * kBlock + j + kBlock / 2] = hi_scaled + m;
    }
  }
}

}  // namespace

float HalfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  uint32_t out = 0;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000u | (mantissa << 13);  // infinity or NaN, payload kept
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 -> 127
  } else if (mantissa == 0) {
    out = sign;  // signed zero
  } else {
    // Subnormal mantissa * 2^-24: normalize so the leading one reaches bit 10.
    uint32_t shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    out = sign | ((113 - shift) << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(out);
}

float BFloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

void DequantizeRow(GgmlType type, std::span<const uint8_t> bytes, std::span<float> out) {
  Require(CanDequantize(type), "type cannot be dequantized", static_cast<size_t>(type), 0);
  const GgmlTypeInfo info = *FindGgmlType(static_cast<uint32_t>(type));
  const auto block_size = static_cast<size_t>(info.block_size);
  Require(out.size() % block_size == 0, "element count is not a whole number of blocks", out.size(),
          block_size);
  Require(bytes.size() == out.size() / block_size * static_cast<size_t>(info.type_size),
          "byte count does not match the element count", bytes.size(), out.size());
  switch (type) {
    case GgmlType::kF32:
      for (size_t i = 0; i < out.size(); ++i) out[i] = std::bit_cast<float>(Le32(&bytes[4 * i]));
      break;
    case GgmlType::kF16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = HalfToFloat(Le16(&bytes[2 * i]));
      break;
    case GgmlType::kBF16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = BFloat16ToFloat(Le16(&bytes[2 * i]));
      break;
    case GgmlType::kQ8_0:
      DequantizeQ8_0(bytes, out);
      break;
    case GgmlType::kQ4_0:
      DequantizeQ4_0(bytes, out);
      break;
    case GgmlType::kQ4_1:
      DequantizeQ4_1(bytes, out);
      break;
    default:
      break;  // excluded by CanDequantize above
  }
}

}  // namespace dv::gguf
