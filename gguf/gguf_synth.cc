#include "gguf/gguf_synth.h"

#include <cstring>
#include <filesystem>

#include "base/file_io.h"
#include "base/named_list.h"
#include "checkpoint/hf_layout.h"
#include "checkpoint/hf_synth.h"
#include "engine/safetensors.h"
#include "engine/synth.h"
#include "gguf/gguf_writer.h"
#include "gguf/llama_model.h"

namespace dv::gguf {
namespace {

// A Qwen3 of these shapes (hf_synth.h) made a Llama: no QK-Norm, its own theta, epsilon 1e-5.
FloatModelConfig LlamaShape(int64_t layers, int64_t hidden, int64_t q_heads, int64_t kv_heads,
                            int64_t head_dim, int64_t intermediate, int64_t vocab, int64_t max_pos,
                            double theta) {
  FloatModelConfig c =
      Qwen3Shape(layers, hidden, q_heads, kv_heads, head_dim, intermediate, vocab, max_pos);
  c.family = ModelFamily::kLlama;
  c.qk_norm = false;
  c.rope_theta = theta;
  // The float32 the file stores, widened: what a reader of the file gets back.
  c.rms_norm_eps = static_cast<double>(1e-5f);
  return c;
}

const std::vector<GgufSynthPreset>& Presets() {
  static const std::vector<GgufSynthPreset> presets = [] {
    const ModelConfig& tiny = FindSynthPreset("qwen3-tiny").config;
    std::vector<GgufSynthPreset> p = {
        {"llama-tiny", LlamaShape(tiny.n_layers, tiny.hidden, tiny.n_q_heads, tiny.n_kv_heads,
                                  tiny.head_dim, tiny.intermediate, tiny.vocab, tiny.max_pos, 1e4)},
        {"smollm2-135m", LlamaShape(30, 576, 9, 3, 64, 1536, 49152, 8192, 1e5)},
    };
    p[1].config.bos_token_id = 1;  // SmolLM2's <|im_start|> and <|im_end|>
    p[1].config.eos_token_ids = {2};
    return p;
  }();
  return presets;
}

// q_proj / k_proj rows from Hugging Face's half-split RoPE layout to GGUF's interleaved one
// (GgufRopeRow, the inverse of what LlamaModel reads back).
std::vector<uint8_t> PermuteRopeRows(const std::vector<uint8_t>& hf, int64_t rows,
                                     int64_t head_dim) {
  std::vector<uint8_t> out(hf.size());
  const size_t row_bytes = hf.size() / static_cast<size_t>(rows);
  for (int64_t hf_row = 0; hf_row < rows; ++hf_row) {
    const auto gguf_row = static_cast<size_t>(GgufRopeRow(hf_row, head_dim));
    std::memcpy(out.data() + gguf_row * row_bytes,
                hf.data() + static_cast<size_t>(hf_row) * row_bytes, row_bytes);
  }
  return out;
}

}  // namespace

const GgufSynthPreset& FindGgufSynthPreset(const std::string& name) {
  return FindNamed<ArtifactError>(Presets(), name, "synthetic GGUF preset");
}

std::vector<std::string> GgufSynthPresetNames() { return NamesOf(Presets()); }

void WriteSynthGguf(const GgufSynthPreset& preset, uint64_t seed, const std::string& path) {
  const FloatModelConfig& c = preset.config;
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  GgufHeaderWriter header;
  header.String("general.architecture", "llama");
  header.String("general.name", "synthetic " + preset.name + " seed " + std::to_string(seed));
  header.Uint32("general.file_type", 32);  // llama.cpp's LLAMA_FTYPE_MOSTLY_BF16
  header.Uint32("llama.context_length", u32(c.max_pos));
  header.Uint32("llama.embedding_length", u32(c.hidden));
  header.Uint32("llama.block_count", u32(c.n_layers));
  header.Uint32("llama.feed_forward_length", u32(c.intermediate));
  header.Uint32("llama.attention.head_count", u32(c.n_q_heads));
  header.Uint32("llama.attention.head_count_kv", u32(c.n_kv_heads));
  header.Uint32("llama.attention.key_length", u32(c.head_dim));
  header.Uint32("llama.attention.value_length", u32(c.head_dim));
  header.Uint32("llama.rope.dimension_count", u32(c.head_dim));
  header.Float32("llama.rope.freq_base", static_cast<float>(c.rope_theta));
  header.Float32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  header.Uint32("llama.vocab_size", u32(c.vocab));
  if (c.bos_token_id) header.Uint32("tokenizer.ggml.bos_token_id", u32(*c.bos_token_id));
  if (!c.eos_token_ids.empty())
    header.Uint32("tokenizer.ggml.eos_token_id", u32(c.eos_token_ids[0]));

  const std::vector<HfTensorSpec> specs = HfTensorLayout(c);
  for (const HfTensorSpec& s : specs) {
    uint64_t bytes = 2;
    for (int64_t d : s.shape) bytes *= static_cast<uint64_t>(d);
    header.Tensor(GgufTensorName(s.name), {s.shape.rbegin(), s.shape.rend()}, GgmlType::kBF16,
                  bytes);
  }

  if (const std::string parent = std::filesystem::path(path).parent_path().string();
      !parent.empty()) {
    MakeDirectories(parent);
  }
  AtomicFileWriter out(path);
  out.Write(header.Bytes());
  const std::vector<uint8_t> zeros(kGgufAlignment, 0);
  for (const HfTensorSpec& s : specs) {
    std::vector<uint8_t> data = HfSynthTensorBf16(c, seed, s);
    if (s.role == HfTensorRole::kQ || s.role == HfTensorRole::kK) {
      data = PermuteRopeRows(data, s.shape[0], c.head_dim);
    }
    out.Write(data);
    const size_t pad = (kGgufAlignment - data.size() % kGgufAlignment) % kGgufAlignment;
    out.Write({zeros.data(), pad});
  }
  out.Commit();
}

}  // namespace dv::gguf
