// Writes a safetensors file exactly as Python's `safetensors` (save_file) lays it out: tensors
// ordered by dtype, wider first (safetensors' Dtype order: I64 before I32, I16, I8), then by
// name; the header's keys in that order, "__metadata__" first when given, compact JSON, padded
// with spaces to a multiple of 8 bytes. So an artifact prepare writes from DetLLM's statistics is
// the same file, byte for byte, that DetLLM's save_file writes -- not only the same tensors.
// Streams tensor by tensor (no copy of the data) through an AtomicFileWriter.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/safetensors.h"

namespace dv {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::kI8;
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;  // little-endian, numel * DTypeSize(dtype) bytes
};

// Throws ArtifactError "<path>: ..." on an I/O error or a size that disagrees with the shape.
void WriteSafetensorsPythonLayout(const std::string& path, std::vector<SafetensorsEntry> tensors,
                                  const std::map<std::string, std::string>& metadata = {});

// Little-endian bytes of float32 / int64 values, whatever the host's byte order.
std::vector<uint8_t> LittleEndianF32(std::span<const float> values);

}  // namespace dv
