// A float checkpoint in memory: its config, its weights as views in their storage dtype, and
// what owns the bytes behind those views (memory-mapped files, or buffers a reader filled).
// Readers: OpenHfCheckpoint (checkpoint/hf_checkpoint.h). Nothing is copied: a 1.2 GB
// checkpoint is mapped, validated and handed to the float engine or to prepare as it is.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "checkpoint/float_weights.h"
#include "engine/safetensors.h"

namespace dv {

class FloatCheckpoint {
 public:
  // `weights` must view only `maps` and `owned` (their storage does not move with them).
  // `weight_files` are the paths whose bytes define the model (ContentSha256).
  FloatCheckpoint(std::string source, FloatWeights weights, std::vector<MappedFile> maps,
                  std::vector<std::vector<uint8_t>> owned, std::vector<std::string> weight_files);
  FloatCheckpoint(const FloatCheckpoint&) = delete;
  FloatCheckpoint& operator=(const FloatCheckpoint&) = delete;

  const std::string& source() const { return source_; }  // the folder (or file) read
  const FloatWeights& weights() const { return weights_; }
  const FloatModelConfig& config() const { return weights_.config; }
  const std::vector<std::string>& weight_files() const { return weight_files_; }

  // The checkpoint's identity, 64 hex digits: for one weight file the SHA-256 of that file (what
  // `sha256sum model.safetensors` prints, and the Hub's LFS oid); for shards the SHA-256 of
  // their `sha256sum` listing ("<hex>  <file name>\n" per shard, in name order). Reads every
  // byte once; computed on the first call.
  const std::string& ContentSha256() const;

  // Lets the kernel drop the resident pages of a tensor that lies in one of the mapped files
  // (they are read back from the page cache if touched again), for a consumer that has copied
  // it into another form; a no-op for tensors in owned buffers.
  void ReleasePages(const FloatTensor& t) const;

  // Whether the checkpoint holds an lm_head.weight beside tied embeddings (ignored, as
  // transformers ignores it).
  bool ignored_lm_head() const { return ignored_lm_head_; }
  void set_ignored_lm_head(bool v) { ignored_lm_head_ = v; }

 private:
  std::string source_;
  FloatWeights weights_;
  std::vector<MappedFile> maps_;
  std::vector<std::vector<uint8_t>> owned_;
  std::vector<std::string> weight_files_;
  bool ignored_lm_head_ = false;
  mutable std::string sha256_;
};

}  // namespace dv
