#include "prepare/safetensors_writer.h"

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>

#include "base/file_io.h"

namespace dv {
namespace {

// Position of a dtype in safetensors' Dtype enum (the Rust crate sorts by it, descending).
int DTypeRank(DType d) {
  switch (d) {
    case DType::kBool:
      return 0;
    case DType::kU8:
      return 1;
    case DType::kI8:
      return 2;
    case DType::kI16:
      return 3;
    case DType::kF16:
      return 4;
    case DType::kBF16:
      return 5;
    case DType::kI32:
      return 6;
    case DType::kF32:
      return 7;
    case DType::kF64:
      return 8;
    case DType::kI64:
      return 9;
    default:
      return -1;
  }
}

}  // namespace

void WriteSafetensorsPythonLayout(const std::string& path, std::vector<SafetensorsEntry> tensors,
                                  const std::map<std::string, std::string>& metadata) {
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
                     const int ra = DTypeRank(a.dtype), rb = DTypeRank(b.dtype);
                     if (ra != rb) return ra > rb;
                     return a.name < b.name;
                   });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  uint64_t offset = 0;
  for (const SafetensorsEntry& t : tensors) {
    int64_t numel = 1;
    for (int64_t s : t.shape) numel *= s;
    if (DTypeRank(t.dtype) < 0 ||
        static_cast<uint64_t>(numel * DTypeSize(t.dtype)) != t.bytes.size()) {
      throw ArtifactError(path + ": tensor " + t.name + " has " + std::to_string(t.bytes.size()) +
                          " bytes for its shape and dtype");
    }
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["dtype"] = DTypeName(t.dtype);
    e["shape"] = t.shape;
    e["data_offsets"] = {offset, offset + t.bytes.size()};
    header[t.name] = e;
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  AtomicFileWriter out(path);
  uint8_t len[8];
  for (int b = 0; b < 8; ++b) len[b] = static_cast<uint8_t>(uint64_t{text.size()} >> (8 * b));
  out.Write(len);
  out.Write({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  for (const SafetensorsEntry& t : tensors) out.Write(t.bytes);
  out.Commit();
}

std::vector<uint8_t> LittleEndianF32(std::span<const float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(values[i]);
    for (int b = 0; b < 4; ++b)
      out[4 * i + static_cast<size_t>(b)] = static_cast<uint8_t>(bits >> (8 * b));
  }
  return out;
}

}  // namespace dv
