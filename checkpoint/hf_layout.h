// The tensors of a Hugging Face Qwen3 / Llama causal LM (transformers' state-dict names and
// nn.Linear's [out, in] shapes), derived from the config alone. The checkpoint reader validates
// against this list and the synthetic writer writes it, so the two cannot disagree.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/float_config.h"
#include "checkpoint/float_weights.h"

namespace dv {

enum class HfTensorRole {
  kEmbed,
  kFinalNorm,
  kLmHead,
  kInputNorm,
  kQ,
  kK,
  kV,
  kO,
  kQBias,
  kKBias,
  kVBias,
  kOBias,
  kQNorm,
  kKNorm,
  kPostNorm,
  kGate,
  kUp,
  kDown,
  kGateBias,
  kUpBias,
  kDownBias,
};

struct HfTensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  HfTensorRole role;
  int64_t layer = -1;  // -1 for embed, final norm and head
};

// Every tensor the config implies, in a fixed order (embedding, layers in order, final norm,
// head). The head (lm_head.weight) is listed only when the embeddings are not tied.
std::vector<HfTensorSpec> HfTensorLayout(const FloatModelConfig& config);

// The FloatWeights field a spec fills (an optional one is engaged).
FloatTensor& HfTensorSlot(FloatWeights& weights, const HfTensorSpec& spec);

// "lm_head.weight": the name of the head, present beside a tied embedding in some checkpoints
// (Qwen3-0.6B), where transformers ignores it.
inline constexpr const char* kHfLmHeadName = "lm_head.weight";

}  // namespace dv
