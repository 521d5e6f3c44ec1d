// A Llama-family GGUF model as a float checkpoint: every tensor dequantized once (LlamaModel,
// ggml's dequantizers, q/k rows in Hugging Face's RoPE layout) into float32 buffers the
// checkpoint owns, and the config its metadata gives. The float engine, the fidelity verbs and
// the benchmarks then run a GGUF exactly as they run a Hugging Face folder of the same model in
// float32, which is what transformers does when it loads a GGUF (`gguf_file=`).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "checkpoint/float_checkpoint.h"
#include "gguf/llama_model.h"

namespace dv::gguf {

// The float checkpoint of a Llama model's file. Its identity (ContentSha256) is the SHA-256 of
// the file; source() is the path. A file LlamaModel::Open refuses, or whose config the float
// engine cannot run, is a GgufError "<path>: <problem>". Needs about 4 bytes per parameter.
// `on_dequantize`, when given, is called once the file has been validated, before the tensors
// are dequantized (seconds for a large model), e.g. to say so.
std::unique_ptr<FloatCheckpoint> OpenGgufCheckpoint(
    const std::string& path, const std::function<void()>& on_dequantize = nullptr);

// The FloatModelConfig of a Llama config: family llama, no QK-Norm, no biases, max_pos the
// context length, the BOS/EOS ids the tokenizer metadata names.
FloatModelConfig FloatConfigOf(const LlamaConfig& config);

// Whether `path` names a GGUF file (a regular file with the magic "GGUF"; a FIFO or device is
// not opened), for verbs that take either a folder or a file.
bool IsGgufFile(const std::string& path);

}  // namespace dv::gguf
