// Reads a Hugging Face checkpoint folder of a Qwen3 (or Llama) causal LM: config.json and
// model.safetensors, or the shards model.safetensors.index.json names, in BF16, F16 or F32.
#pragma once

#include <memory>
#include <string>

#include "checkpoint/float_checkpoint.h"

namespace dv {

// Opens `dir`, memory-maps its weight files and validates every tensor against config.json:
// a missing, unexpected, wrongly shaped or non-float tensor, a tensor the index puts in another
// shard, or a malformed file is an ArtifactError "<file>: <problem>" naming the tensor. As
// transformers does, model.safetensors is read when present, else the index; with
// tie_word_embeddings the head is the embedding, and an lm_head.weight beside it (Qwen3-0.6B
// ships one) is checked for shape and dtype and then ignored. Buffers transformers saved for
// older models (".rotary_emb.inv_freq") are ignored too. Nothing is copied.
std::unique_ptr<FloatCheckpoint> OpenHfCheckpoint(const std::string& dir);

// Whether `dir` looks like a Hugging Face checkpoint folder (has config.json and
// model.safetensors or model.safetensors.index.json).
bool IsHfCheckpointDir(const std::string& dir);

}  // namespace dv
