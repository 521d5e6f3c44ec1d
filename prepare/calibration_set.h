// The token sequences the calibration forward runs: each sequence alone (batch 1), positions
// 0..T-1, no BOS added -- as DetLLM's calibrate_kv_ranges feeds WikiText2 chunks. Sources:
//   --calib-ids FILE  a JSON list of token-id lists, or an object with such a list under "ids"
//                     (the form of ../shared/detllm/prepare/p-small/calib_ids.json);
//   --calib FILE      plain text, tokenized whole and cut into consecutive chunks
//                     (prepare/calib_text.h, which needs the tokenizer);
//   built in          SplitMix64 token ids, for synthetic checkpoints and smoke tests (a trained
//                     model should be calibrated on text).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dv {

struct CalibrationSet {
  std::vector<std::vector<int32_t>> sequences;
  std::string kind;    // "ids", "text", "builtin"
  std::string source;  // the file as given, or "builtin:<seed>"
  std::string sha256;  // of the source file; for builtin, of the ids (int32 little-endian)

  int64_t samples() const { return static_cast<int64_t>(sequences.size()); }
  int64_t max_len() const;
  int64_t tokens() const;
  // The source without its folder ("calib_ids.json", "builtin:0"): what the artifact records,
  // so that the same calibration gives the same config.json wherever its file lies.
  std::string SourceName() const;
  // "ids calib_ids.json (16 x 64 tokens, sha256 3f0c...)": one line for logs and metadata.
  std::string Describe() const;
};

// The first `samples` lists of `path` (all when 0), each cut to its first `len` ids (whole when
// 0). Every id must lie in [0, vocab). Throws ArtifactError "<path>: <problem>" (not JSON, not a
// list of non-empty integer lists, fewer lists or shorter lists than asked, an id out of range
// with its sequence and position).
CalibrationSet LoadCalibrationIds(const std::string& path, int64_t samples, int64_t len,
                                  int64_t vocab);

// Chunks [s*len, (s+1)*len) of `ids`, s < samples. Throws ArtifactError "<source>: ..." when ids
// holds fewer than samples * len tokens or an id lies outside [0, vocab).
CalibrationSet ChunkCalibrationIds(const std::vector<int32_t>& ids, int64_t samples, int64_t len,
                                   int64_t vocab, const std::string& source);

// `samples` sequences of `len` ids drawn uniformly from [0, vocab) by SplitMix64 streams
// ("calib.<s>"), the same on every platform.
CalibrationSet BuiltinCalibration(int64_t vocab, int64_t samples, int64_t len, uint64_t seed = 0);

// The built-in calibration's default size: 4 x 128 tokens (the demo's synthetic model).
inline constexpr int64_t kBuiltinCalibSamples = 4;
inline constexpr int64_t kBuiltinCalibLen = 128;

}  // namespace dv
