// config.json of a Hugging Face checkpoint, with the keys and defaults transformers uses for
// Qwen3 (model_type "qwen3") and Llama ("llama") models. Both layouts transformers writes are
// read: 4.x (top-level rope_theta / rope_scaling, torch_dtype) and 5.x (rope_parameters, dtype);
// numbers that may be written as int or float (rope_theta, rms_norm_eps) are accepted as either.
#pragma once

#include <string>
#include <string_view>

#include "checkpoint/float_config.h"

namespace dv {

// Parses and validates config.json text; `path` names the file in errors. Rejects what the float
// engine cannot run exactly as transformers does (another model_type or hidden_act, RoPE scaling,
// sliding-window layers, inconsistent shapes) with ArtifactError "<path>: <problem>".
FloatModelConfig ParseHfConfig(std::string_view text, const std::string& path);

// config.json text for a Qwen3 model in the layout of the published Qwen3 checkpoints
// (transformers 4.51: every key Qwen3Config writes, sorted, two-space indent, as
// PretrainedConfig.to_json_string does). `storage_dtype` is written as torch_dtype.
std::string Qwen3ConfigJson(const FloatModelConfig& config);

}  // namespace dv
