#pragma once
// ggml's tensor types as a GGUF file numbers them (ggml.h `enum ggml_type`): the id, the name, and
// the block layout (elements per block, bytes per block) needed to size a tensor of any type, even
// one this reader cannot dequantize.
#include <cstdint>
#include <optional>
#include <string>

namespace dv::gguf {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
  kNVFP4 = 40,
  kQ1_0 = 41,
};

struct GgmlTypeInfo {
  GgmlType type;
  const char* name;    // as ggml spells it: "Q4_1", "BF16"
  int64_t block_size;  // elements per block; a row (dims[0]) is a whole number of blocks
  int64_t type_size;   // bytes per block
};

// The layout of type id `id`, or nullopt for an id ggml does not define (4, 5, 31..33 and 36..38
// were removed from ggml; files using them are rejected, as ggml rejects them).
std::optional<GgmlTypeInfo> FindGgmlType(uint32_t id);

// "Q4_1"; "type 99" for an unknown id.
std::string GgmlTypeName(GgmlType type);

// Whether Dequantize (dequantize.h) converts this type: F32, F16, BF16, Q8_0, Q4_0, Q4_1.
bool CanDequantize(GgmlType type);

// "F32, F16, BF16, Q8_0, Q4_0, Q4_1", for error messages.
const char* DequantizableTypeNames();

}  // namespace dv::gguf
