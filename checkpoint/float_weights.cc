#include "checkpoint/float_weights.h"

#include <bit>
#include <cstring>

#include "base/check.h"
#include "checkpoint/half_float.h"

namespace dv {
namespace {

uint16_t Le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

uint32_t Le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

template <typename Out>
void Decode(const FloatTensor& t, int64_t first, std::span<Out> out) {
  DV_CHECK(first >= 0 && first + static_cast<int64_t>(out.size()) <= t.numel())
      << "DecodeFloat: elements [" << first << ", +" << out.size() << ") beyond tensor " << t.name;
  const int64_t size = DTypeSize(t.dtype);
  const uint8_t* p = t.bytes.data() + first * size;
  switch (t.dtype) {
    case DType::kBF16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = Bf16BitsToFloat(Le16(p + 2 * i));
      return;
    case DType::kF16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = F16BitsToFloat(Le16(p + 2 * i));
      return;
    case DType::kF32:
      if constexpr (std::endian::native == std::endian::little && std::is_same_v<Out, float>) {
        std::memcpy(out.data(), p, out.size() * 4);
      } else {
        for (size_t i = 0; i < out.size(); ++i) out[i] = std::bit_cast<float>(Le32(p + 4 * i));
      }
      return;
    default:
      // The checkpoint reader admits float tensors only.
      DV_CHECK(false) << "DecodeFloat: tensor " << t.name << " has dtype " << DTypeName(t.dtype);
  }
}

}  // namespace

int64_t FloatTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

void DecodeFloat32(const FloatTensor& t, int64_t first, std::span<float> out) {
  Decode(t, first, out);
}

void DecodeFloat64(const FloatTensor& t, int64_t first, std::span<double> out) {
  Decode(t, first, out);
}

std::optional<int64_t> FirstNonFinite(const FloatTensor& t) {
  // Exponent bits all ones, per dtype, on the little-endian element bytes.
  const int64_t size = DTypeSize(t.dtype);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = t.bytes.data() + i * size;
    bool bad = false;
    switch (t.dtype) {
      case DType::kBF16:
        bad = (Le16(p) & 0x7f80u) == 0x7f80u;
        break;
      case DType::kF16:
        bad = (Le16(p) & 0x7c00u) == 0x7c00u;
        break;
      case DType::kF32:
        bad = (Le32(p) & 0x7f800000u) == 0x7f800000u;
        break;
      default:
        DV_CHECK(false) << "FirstNonFinite: tensor " << t.name << " is not float";
    }
    if (bad) return i;
  }
  return std::nullopt;
}

std::vector<float> ReadFloat32(const FloatTensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  Decode(t, 0, std::span<float>(v));
  return v;
}

std::vector<double> ReadFloat64(const FloatTensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  Decode(t, 0, std::span<double>(v));
  return v;
}

}  // namespace dv
