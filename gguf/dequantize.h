#pragma once
// ggml's reference dequantizers (ggml-quants.c `dequantize_row_*`), written out for the types a
// Llama GGUF usually holds. Every output is what ggml's scalar reference and gguf-py's
// gguf.quants.dequantize compute, bit for bit. Every product q * d is exact in float32 (d has 11
// significant bits, q at most 8), so the only rounding is Q4_1's final "+ m", which rounds once
// whether or not a compiler fuses it: the result cannot depend on the compiler or the CPU.
//
//   F32   the value
//   F16   IEEE binary16 -> binary32, exact (subnormals, infinities and NaN payloads kept)
//   BF16  the 16 bits shifted into the top of a binary32, exact
//   Q8_0  blocks of 32: f16 d, int8 q[32];            y = q * d
//   Q4_0  blocks of 32: f16 d, u8 qs[16];             y[j] = (lo(qs[j]) - 8) * d,
//                                                     y[j+16] = (hi(qs[j]) - 8) * d
//   Q4_1  blocks of 32: f16 d, f16 m, u8 qs[16];      y[j] = lo(qs[j]) * d + m,
//                                                     y[j+16] = hi(qs[j]) * d + m
// All multi-byte fields are little-endian, whatever the host.
#include <cstdint>
#include <span>

#include "gguf/ggml_type.h"

namespace dv::gguf {

// binary16 bits -> float, exactly.
float HalfToFloat(uint16_t bits);
// bfloat16 bits -> float, exactly.
float BFloat16ToFloat(uint16_t bits);

// Dequantizes out.size() elements from `bytes`. Preconditions (checked, abort on violation):
// CanDequantize(type), out.size() a multiple of the block size, bytes.size() equal to the blocks'
// size. GgufFile::Dequantize checks these against the file and reports a typed error instead.
void DequantizeRow(GgmlType type, std::span<const uint8_t> bytes, std::span<float> out);

}  // namespace dv::gguf
