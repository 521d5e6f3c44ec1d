#include "prepare/calibration_set.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "engine/prng.h"
#include "engine/safetensors.h"

namespace dv {
namespace {

constexpr size_t kMaxIdsFileBytes = size_t{256} << 20;

[[noreturn]] void Fail(const std::string& path, const std::string& what) {
  throw ArtifactError(path + ": " + what);
}

void CheckIds(const std::vector<std::vector<int32_t>>& seqs, int64_t vocab,
              const std::string& source) {
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (size_t t = 0; t < seqs[s].size(); ++t) {
      if (seqs[s][t] < 0 || seqs[s][t] >= vocab) {
        Fail(source, "token id " + std::to_string(seqs[s][t]) + " (sequence " + std::to_string(s) +
                         ", position " + std::to_string(t) +
                         ") is outside the checkpoint's vocabulary [0, " + std::to_string(vocab) +
                         ")");
      }
    }
  }
}

std::string IdsSha256(const std::vector<std::vector<int32_t>>& seqs) {
  std::vector<uint8_t> bytes;
  for (const auto& s : seqs) {
    for (int32_t id : s) {
      for (int b = 0; b < 4; ++b)
        bytes.push_back(static_cast<uint8_t>(static_cast<uint32_t>(id) >> (8 * b)));
    }
  }
  return Sha256Hex(bytes);
}

}  // namespace

int64_t CalibrationSet::max_len() const {
  int64_t m = 0;
  for (const auto& s : sequences) m = std::max<int64_t>(m, static_cast<int64_t>(s.size()));
  return m;
}

int64_t CalibrationSet::tokens() const {
  int64_t n = 0;
  for (const auto& s : sequences) n += static_cast<int64_t>(s.size());
  return n;
}

std::string CalibrationSet::SourceName() const {
  if (kind == "builtin") return source;
  return std::filesystem::path(source).filename().string();
}

std::string CalibrationSet::Describe() const {
  return kind + " " + SourceName() + " (" + std::to_string(samples()) + " x " +
         std::to_string(max_len()) + " tokens, sha256 " + sha256.substr(0, 16) + ")";
}

CalibrationSet LoadCalibrationIds(const std::string& path, int64_t samples, int64_t len,
                                  int64_t vocab) {
  const MappedFile file = MappedFile::Open(path);
  if (file.bytes().size() > kMaxIdsFileBytes) Fail(path, "larger than 256 MiB");
  nlohmann::json j = nlohmann::json::parse(file.bytes().begin(), file.bytes().end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded()) Fail(path, "not JSON");
  if (j.is_object() && j.contains("ids")) j = j["ids"];
  if (!j.is_array() || j.empty()) {
    Fail(path, "expected a non-empty JSON list of token-id lists (or an object with \"ids\")");
  }
  const int64_t available = static_cast<int64_t>(j.size());
  if (samples > available) {
    Fail(path, "holds " + std::to_string(available) + " sequences, --calib-samples asks for " +
                   std::to_string(samples));
  }
  const int64_t n = samples > 0 ? samples : available;
  CalibrationSet set;
  set.kind = "ids";
  set.source = path;
  set.sha256 = Sha256Hex(file.bytes());
  for (int64_t s = 0; s < n; ++s) {
    const nlohmann::json& seq = j[static_cast<size_t>(s)];
    if (!seq.is_array() || seq.empty()) {
      Fail(path, "sequence " + std::to_string(s) + " is not a non-empty list of token ids");
    }
    const int64_t have = static_cast<int64_t>(seq.size());
    if (len > have) {
      Fail(path, "sequence " + std::to_string(s) + " has " + std::to_string(have) +
                     " ids, --calib-len asks for " + std::to_string(len));
    }
    const int64_t take = len > 0 ? len : have;
    std::vector<int32_t> ids;
    ids.reserve(static_cast<size_t>(take));
    for (int64_t t = 0; t < take; ++t) {
      const nlohmann::json& v = seq[static_cast<size_t>(t)];
      if (!v.is_number_integer()) {
        Fail(path, "sequence " + std::to_string(s) + ", position " + std::to_string(t) +
                       ": not an integer token id");
      }
      const int64_t id = v.get<int64_t>();
      if (id < 0 || id >= vocab) {
        Fail(path, "token id " + std::to_string(id) + " (sequence " + std::to_string(s) +
                       ", position " + std::to_string(t) +
                       ") is outside the checkpoint's vocabulary [0, " + std::to_string(vocab) +
                       ")");
      }
      ids.push_back(static_cast<int32_t>(id));
    }
    set.sequences.push_back(std::move(ids));
  }
  return set;
}

CalibrationSet ChunkCalibrationIds(const std::vector<int32_t>& ids, int64_t samples, int64_t len,
                                   int64_t vocab, const std::string& source) {
  if (samples <= 0 || len <= 0) Fail(source, "--calib-samples and --calib-len must be >= 1");
  const int64_t need = samples * len;
  if (static_cast<int64_t>(ids.size()) < need) {
    Fail(source, "gives " + std::to_string(ids.size()) + " tokens; --calib-samples " +
                     std::to_string(samples) + " x --calib-len " + std::to_string(len) + " needs " +
                     std::to_string(need) +
                     " (pass fewer or shorter samples, or a "
                     "longer text)");
  }
  CalibrationSet set;
  set.kind = "text";
  set.source = source;
  for (int64_t s = 0; s < samples; ++s) {
    set.sequences.emplace_back(ids.begin() + s * len, ids.begin() + (s + 1) * len);
  }
  CheckIds(set.sequences, vocab, source);
  return set;
}

CalibrationSet BuiltinCalibration(int64_t vocab, int64_t samples, int64_t len, uint64_t seed) {
  CalibrationSet set;
  set.kind = "builtin";
  set.source = "builtin:" + std::to_string(seed);
  for (int64_t s = 0; s < samples; ++s) {
    SplitMix64 rng = TensorStream(seed, "calib." + std::to_string(s));
    std::vector<int32_t> ids(static_cast<size_t>(len));
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.Uniform(0, vocab - 1));
    set.sequences.push_back(std::move(ids));
  }
  set.sha256 = IdsSha256(set.sequences);
  return set;
}

}  // namespace dv
