#include "prepare/calib_stats.h"

#include <bit>
#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/safetensors.h"
#include "prepare/safetensors_writer.h"

namespace dv {
namespace {

struct StatSlot {
  const char* name;
  std::vector<float> CalibStats::*values;
};

constexpr StatSlot kSlots[] = {
    {"k_chan_max", &CalibStats::k_chan_max}, {"q_chan_max", &CalibStats::q_chan_max},
    {"v_max", &CalibStats::v_max},           {"attn_in_max", &CalibStats::attn_in_max},
    {"mlp_in_max", &CalibStats::mlp_in_max}, {"down_in_max", &CalibStats::down_in_max},
    {"o_in_max", &CalibStats::o_in_max},
};

std::vector<int64_t> ShapeOf(const CalibStats& s, const std::string& name) {
  const int64_t L = s.n_layers;
  if (name == "k_chan_max" || name == "q_chan_max") return {L, s.n_kv_heads, s.head_dim};
  if (name == "v_max") return {L, s.n_kv_heads};
  if (name == "attn_in_max" || name == "mlp_in_max") return {L, s.hidden};
  if (name == "down_in_max") return {L, s.intermediate};
  return {L, s.n_q_heads * s.head_dim};  // o_in_max
}

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

CalibStats CalibStats::ZerosFor(const FloatModelConfig& c) {
  CalibStats s;
  s.n_layers = c.n_layers;
  s.hidden = c.hidden;
  s.n_q_heads = c.n_q_heads;
  s.n_kv_heads = c.n_kv_heads;
  s.head_dim = c.head_dim;
  s.intermediate = c.intermediate;
  for (const StatSlot& slot : kSlots) {
    (s.*slot.values).assign(static_cast<size_t>(Numel(ShapeOf(s, slot.name))), 0.0f);
  }
  return s;
}

const std::vector<std::string>& CalibStatNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const StatSlot& slot : kSlots) n.push_back(slot.name);
    return n;
  }();
  return names;
}

void SaveCalibStats(const CalibStats& stats, const std::string& path) {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<SafetensorsEntry> entries;
  for (const StatSlot& slot : kSlots) {
    bytes.push_back(LittleEndianF32(stats.*slot.values));
  }
  for (size_t i = 0; i < std::size(kSlots); ++i) {
    entries.push_back({kSlots[i].name, DType::kF32, ShapeOf(stats, kSlots[i].name), bytes[i]});
  }
  std::map<std::string, std::string> meta;
  if (stats.calib_samples > 0) meta["calib_samples"] = std::to_string(stats.calib_samples);
  if (stats.calib_len > 0) meta["calib_len"] = std::to_string(stats.calib_len);
  if (!stats.calibration.empty()) meta["calibration"] = stats.calibration;
  WriteSafetensorsPythonLayout(path, std::move(entries), meta);
}

CalibStats LoadCalibStats(const std::string& path, const FloatModelConfig& config) {
  const MappedFile file = MappedFile::Open(path);
  const auto views = ParseSafetensors(file.bytes(), path);
  CalibStats s = CalibStats::ZerosFor(config);
  for (const auto& [name, view] : views) {
    bool known = false;
    for (const StatSlot& slot : kSlots) known = known || name == slot.name;
    if (!known) throw ArtifactError(path + ": unexpected tensor " + name);
  }
  for (const StatSlot& slot : kSlots) {
    const auto it = views.find(slot.name);
    if (it == views.end()) throw ArtifactError(path + ": missing tensor " + slot.name);
    const TensorView& v = it->second;
    const std::vector<int64_t> want = ShapeOf(s, slot.name);
    if (v.dtype != DType::kF32) {
      throw ArtifactError(path + ": " + slot.name + " is " + v.dtype_name + ", expected F32");
    }
    if (v.shape != want) {
      throw ArtifactError(path + ": " + slot.name + " has shape " + ShapeText(v.shape) +
                          ", the checkpoint needs " + ShapeText(want));
    }
    std::vector<float>& out = s.*slot.values;
    for (size_t i = 0; i < out.size(); ++i) {
      uint32_t bits = 0;
      for (int b = 0; b < 4; ++b)
        bits |= uint32_t{v.bytes[4 * i + static_cast<size_t>(b)]} << (8 * b);
      const float x = std::bit_cast<float>(bits);
      if (!std::isfinite(x) || x < 0.0f) {
        throw ArtifactError(path + ": " + slot.name + " element " + std::to_string(i) +
                            " is not a finite maximum >= 0");
      }
      out[i] = x;
    }
  }
  // Metadata written by SaveCalibStats (absent in DetLLM's own files).
  const auto& bytes = file.bytes();
  uint64_t n = 0;
  for (int b = 0; b < 8; ++b) n |= uint64_t{bytes[static_cast<size_t>(b)]} << (8 * b);
  const auto header = nlohmann::json::parse(
      bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n), nullptr, false);
  if (header.is_object() && header.contains("__metadata__") && header["__metadata__"].is_object()) {
    const auto& meta = header["__metadata__"];
    auto number = [&](const char* key) -> int64_t {
      if (!meta.contains(key) || !meta[key].is_string()) return 0;
      try {
        return std::stoll(meta[key].get<std::string>());
      } catch (const std::exception&) {
        return 0;
      }
    };
    s.calib_samples = number("calib_samples");
    s.calib_len = number("calib_len");
    if (meta.contains("calibration") && meta["calibration"].is_string()) {
      s.calibration = meta["calibration"].get<std::string>();
    }
  }
  return s;
}

}  // namespace dv
