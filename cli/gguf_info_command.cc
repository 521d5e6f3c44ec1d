// detverify gguf-info FILE: what a GGUF file holds, for people and scripts: the header, every
// metadata key with its type and value (arrays summarized), every tensor with its type, shape and
// place, and, for a Llama model, the config and tokenizer this tool reads from it.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/command.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_tokenizer.h"
#include "gguf/llama_model.h"

namespace dv::cli {
namespace {

struct GgufInfoOptions {
  std::string path;
  bool json = false;
  size_t items = 6;
};

std::string Shape(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string Bytes(uint64_t n) {
  char buf[32];
  if (n >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  } else if (n >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  }
  return buf;
}

std::string TypeOf(const gguf::Value& v) {
  std::string type = gguf::ValueTypeName(v.type());
  if (v.is_array()) type += "[" + std::string(gguf::ValueTypeName(v.element_type())) + "]";
  return type;
}

// The value as JSON: scalars as themselves (strings replaced where not UTF-8), arrays as
// {"count": n, "items": [first `items`...]}.
nlohmann::json ValueJson(const gguf::Value& v, size_t items) {
  const auto element = [&](uint64_t i) -> nlohmann::json {
    switch (v.element_type()) {
      case gguf::ValueType::kString:
        return std::string(v.AsString(i));
      case gguf::ValueType::kBool:
        return v.AsBool(i);
      case gguf::ValueType::kFloat32:
      case gguf::ValueType::kFloat64:
        return v.AsFloat(i);
      case gguf::ValueType::kUint64:
        return v.AsUint64(i);
      default:
        return *v.AsInt(i);
    }
  };
  if (!v.is_array()) return element(0);
  nlohmann::json list = nlohmann::json::array();
  for (uint64_t i = 0; i < v.size() && i < items; ++i) list.push_back(element(i));
  return {{"count", v.size()}, {"items", list}};
}

// What this tool makes of the file as a model: the Llama config and the tokenizer, or why not.
struct ModelView {
  std::optional<gguf::LlamaConfig> llama;
  std::string llama_error;
  std::optional<gguf::GgufTokenizer> tokenizer;
  std::string tokenizer_error;
};

ModelView Inspect(const gguf::GgufFile& f) {
  ModelView view;
  if (f.Find("general.architecture") != nullptr) {
    try {
      view.llama = gguf::LlamaModel::Open(f.path()).config();
    } catch (const std::exception& e) {
      view.llama_error = e.what();
    }
  }
  if (f.Find("tokenizer.ggml.model") != nullptr) {
    try {
      view.tokenizer = gguf::LoadGgufTokenizer(f);
    } catch (const std::exception& e) {
      view.tokenizer_error = e.what();
    }
  }
  return view;
}

// "<path>: problem" -> "problem": the path is already printed at the top.
std::string WithoutPath(const std::string& error, const std::string& path) {
  return error.starts_with(path + ": ") ? error.substr(path.size() + 2) : error;
}

nlohmann::json ConfigJson(const gguf::LlamaConfig& c) {
  return {{"name", c.name},
          {"hidden_size", c.hidden_size},
          {"num_hidden_layers", c.num_layers},
          {"num_attention_heads", c.num_heads},
          {"num_key_value_heads", c.num_kv_heads},
          {"head_dim", c.head_dim},
          {"intermediate_size", c.intermediate_size},
          {"vocab_size", c.vocab_size},
          {"max_position_embeddings", c.context_length},
          {"rope_theta", c.rope_theta},
          {"rms_norm_eps", c.rms_norm_eps},
          {"tie_word_embeddings", c.tie_word_embeddings},
          {"bos_token_id", c.bos_token_id},
          {"eos_token_id", c.eos_token_id}};
}

nlohmann::json TokenizerJson(const gguf::GgufTokenizer& t) {
  return {
      {"model", t.model},
      {"pre", t.pre},
      {"pre_tokenizer", tok::PreTokenizerName(t.tokenizer.pre_tokenizer())},
      {"tokens", t.tokenizer.VocabSize()},
      {"bos_token_id", t.bos_id},
      {"eos_token_id", t.eos_id},
      {"unknown_token_id", t.unk_id},
      {"padding_token_id", t.pad_id},
      {"add_bos_token", t.add_bos},
      {"chat_template", t.chat ? nlohmann::json(t.chat->name())
                               : (t.chat_template_source.empty() ? nlohmann::json(nullptr)
                                                                 : nlohmann::json("unsupported"))}};
}

void PrintText(const gguf::GgufFile& f, const ModelView& view, const GgufInfoOptions& o) {
  std::printf("%s: GGUF v%u, %s, alignment %u, data section at byte %llu\n", f.path().c_str(),
              f.version(), Bytes(f.file_size()).c_str(), f.alignment(),
              static_cast<unsigned long long>(f.data_offset()));
  std::printf("\nmetadata (%zu keys)\n", f.metadata().size());
  size_t key_width = 0;
  for (const auto& m : f.metadata()) key_width = std::max(key_width, m.key.size());
  for (const auto& m : f.metadata()) {
    std::printf("  %-*.*s  %-16s %s\n", static_cast<int>(key_width), static_cast<int>(m.key.size()),
                m.key.data(), TypeOf(m.value).c_str(),
                gguf::DescribeValue(m.value, o.items).c_str());
  }
  uint64_t total = 0;
  size_t name_width = 0;
  for (const auto& t : f.tensors()) {
    total += t.nbytes;
    name_width = std::max(name_width, t.name.size());
  }
  std::printf(
      "\ntensors (%zu, %s; shapes row-major as Hugging Face writes them, offsets from "
      "the data section)\n",
      f.tensors().size(), Bytes(total).c_str());
  for (const auto& t : f.tensors()) {
    std::printf("  %-*.*s  %-7s %-16s at %-12llu %s\n", static_cast<int>(name_width),
                static_cast<int>(t.name.size()), t.name.data(), gguf::GgmlTypeName(t.type).c_str(),
                Shape(t.Shape()).c_str(), static_cast<unsigned long long>(t.offset),
                Bytes(t.nbytes).c_str());
  }
  if (view.llama) {
    const gguf::LlamaConfig& c = *view.llama;
    std::printf(
        "\nLlama model%s%s\n  hidden %lld, layers %lld, heads %lld, KV heads %lld, head_dim %lld, "
        "intermediate %lld, vocab %lld, context %lld\n  rope theta %.9g, rms eps %.9g, %s "
        "embeddings, bos %lld, eos %lld\n",
        c.name.empty() ? "" : ": ", c.name.c_str(), static_cast<long long>(c.hidden_size),
        static_cast<long long>(c.num_layers), static_cast<long long>(c.num_heads),
        static_cast<long long>(c.num_kv_heads), static_cast<long long>(c.head_dim),
        static_cast<long long>(c.intermediate_size), static_cast<long long>(c.vocab_size),
        static_cast<long long>(c.context_length), c.rope_theta, c.rms_norm_eps,
        c.tie_word_embeddings ? "tied" : "untied", static_cast<long long>(c.bos_token_id),
        static_cast<long long>(c.eos_token_id));
  } else if (!view.llama_error.empty()) {
    std::printf("\nnot a Llama model this tool can run: %s\n",
                WithoutPath(view.llama_error, f.path()).c_str());
  }
  if (view.tokenizer) {
    const gguf::GgufTokenizer& t = *view.tokenizer;
    std::printf("\ntokenizer: %s/%s (%s), %d tokens, bos %d, eos %d; chat template: %s\n",
                t.model.c_str(), t.pre.c_str(), tok::PreTokenizerName(t.tokenizer.pre_tokenizer()),
                t.tokenizer.VocabSize(), t.bos_id, t.eos_id,
                t.chat ? t.chat->name()
                       : (t.chat_template_source.empty() ? "none" : "present, not supported"));
  } else if (!view.tokenizer_error.empty()) {
    std::printf("\ntokenizer not supported: %s\n",
                WithoutPath(view.tokenizer_error, f.path()).c_str());
  }
}

nlohmann::json InfoJson(const gguf::GgufFile& f, const ModelView& view, const GgufInfoOptions& o) {
  nlohmann::json metadata = nlohmann::json::array();
  for (const auto& m : f.metadata()) {
    metadata.push_back({{"key", std::string(m.key)},
                        {"type", TypeOf(m.value)},
                        {"value", ValueJson(m.value, o.items)}});
  }
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : f.tensors()) {
    tensors.push_back({{"name", std::string(t.name)},
                       {"type", gguf::GgmlTypeName(t.type)},
                       {"shape", t.Shape()},
                       {"offset", t.offset},
                       {"bytes", t.nbytes}});
  }
  nlohmann::json out = {
      {"file", f.path()},           {"version", f.version()},         {"bytes", f.file_size()},
      {"alignment", f.alignment()}, {"data_offset", f.data_offset()}, {"metadata", metadata},
      {"tensors", tensors}};
  if (view.llama) out["llama"] = ConfigJson(*view.llama);
  if (!view.llama_error.empty()) out["llama_error"] = WithoutPath(view.llama_error, f.path());
  if (view.tokenizer) out["tokenizer"] = TokenizerJson(*view.tokenizer);
  if (!view.tokenizer_error.empty()) {
    out["tokenizer_error"] = WithoutPath(view.tokenizer_error, f.path());
  }
  return out;
}

void RunGgufInfo(const GgufInfoOptions& o, CommandContext& ctx) {
  const gguf::GgufFile f = gguf::GgufFile::Open(o.path);
  const ModelView view = Inspect(f);
  if (o.json) {
    std::cout << InfoJson(f, view, o).dump(1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    PrintText(f, view, o);
  }
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupGgufInfoCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<GgufInfoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "gguf-info", "print a GGUF file's metadata, tensors and, for a Llama model, its config");
  cmd->add_option("file", opt->path, "the .gguf file")->required();
  cmd->add_flag("--json", opt->json, "print JSON");
  cmd->add_option("--items", opt->items, "array elements to show per key (default 6)")
      ->check(CLI::Range(0, 1000000));
  cmd->callback([opt, &ctx]() { RunGgufInfo(*opt, ctx); });
}

}  // namespace dv::cli
