#include "tokenizer/tokenizer_json.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/strict_json.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_error.h"

namespace dv::tok {
namespace {

using nlohmann::json;

class Validator {
 public:
  explicit Validator(const std::string& name) : name_(name) {}

  [[noreturn]] void Fail(const std::string& problem) const {
    throw TokenizerError(name_ + ": " + problem);
  }

  const json& Object(const json& parent, const char* key, const std::string& where) const {
    const auto it = parent.find(key);
    if (it == parent.end() || !it->is_object()) Fail(where + "." + key + " must be an object");
    return *it;
  }

  // The string at parent[key], or `fallback` if the key is absent or null.
  std::string String(const json& parent, const char* key, const std::string& where,
                     const std::string& fallback) const {
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return fallback;
    if (!it->is_string()) Fail(where + "." + key + " must be a string");
    return it->get<std::string>();
  }

  bool Bool(const json& parent, const char* key, const std::string& where, bool fallback) const {
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) Fail(where + "." + key + " must be true or false");
    return it->get<bool>();
  }

  int32_t Id(const json& value, const std::string& where) const {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() > std::numeric_limits<int32_t>::max() - 1) {
      Fail(where + " must be an id in [0, 2^31 - 1)");
    }
    return static_cast<int32_t>(value.get<int64_t>());
  }

 private:
  const std::string& name_;
};

std::string Quoted(const std::string& s) { return json(s).dump(); }

void ReadModel(const Validator& v, const json& model, TokenizerSpec& spec) {
  const std::string type = v.String(model, "type", "model", "");
  if (type != "BPE") {
    v.Fail(type.empty() ? "model.type is missing (only BPE is supported)"
                        : "unsupported model type " + Quoted(type) + " (only BPE)");
  }
  if (!model.value("dropout", json()).is_null() && model["dropout"] != 0.0) {
    v.Fail("unsupported model.dropout (BPE dropout is not deterministic)");
  }
  if (v.Bool(model, "byte_fallback", "model", false)) v.Fail("unsupported model.byte_fallback");
  if (v.Bool(model, "ignore_merges", "model", false)) v.Fail("unsupported model.ignore_merges");
  if (!v.String(model, "continuing_subword_prefix", "model", "").empty() ||
      !v.String(model, "end_of_word_suffix", "model", "").empty()) {
    v.Fail("unsupported model.continuing_subword_prefix / end_of_word_suffix");
  }

  const json& vocab = v.Object(model, "vocab", "model");
  spec.vocab.reserve(vocab.size());
  std::set<int32_t> ids;
  for (const auto& [token, id_value] : vocab.items()) {
    const int32_t id = v.Id(id_value, "model.vocab[" + Quoted(token) + "]");
    if (!ids.insert(id).second) v.Fail("model.vocab uses id " + std::to_string(id) + " twice");
    spec.vocab.emplace_back(token, id);
  }

  const auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) v.Fail("model.merges must be an array");
  spec.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    const std::string where = "model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      // "a b": exactly one space, as Hugging Face requires; byte-level tokens never contain one.
      const std::string line = m.get<std::string>();
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        v.Fail(where + " " + Quoted(line) + " is not two tokens separated by one space");
      }
      spec.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      v.Fail(where + " must be \"a b\" or [\"a\", \"b\"]");
    }
  }
}

void ReadAddedTokens(const Validator& v, const json& root, TokenizerSpec& spec) {
  const auto added = root.find("added_tokens");
  if (added == root.end() || added->is_null()) return;
  if (!added->is_array()) v.Fail("added_tokens must be an array");
  for (size_t i = 0; i < added->size(); ++i) {
    const json& t = (*added)[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("id") || !t.contains("content")) {
      v.Fail(where + " must be an object with \"id\" and \"content\"");
    }
    AddedToken token{v.String(t, "content", where, ""), v.Id(t["id"], where + ".id"),
                     v.Bool(t, "special", where, false)};
    for (const char* flag : {"lstrip", "rstrip", "single_word", "normalized"}) {
      if (v.Bool(t, flag, where, false)) {
        v.Fail(where + " (" + Quoted(token.content) + ") sets unsupported option \"" + flag + "\"");
      }
    }
    spec.added_tokens.push_back(std::move(token));
  }
}

// ByteLevel(add_prefix_space=false, use_regex=`use_regex`); trim_offsets changes offsets only.
bool IsByteLevel(const json& j, bool use_regex) {
  return j.is_object() && j.value("type", "") == "ByteLevel" &&
         !j.value("add_prefix_space", false) && j.value("use_regex", true) == use_regex;
}

// The pre-tokenizer chains of pretokenizer.h, as tokenizer.json spells them. A bare GPT-2
// ByteLevel is not accepted: no such vocabulary has been checked against Hugging Face here.
std::optional<PreTokenizer> ReadPreTokenizer(const json& pre) {
  if (!pre.is_object() || pre.value("type", "") != "Sequence" ||
      !pre.value("pretokenizers", json()).is_array() || pre["pretokenizers"].size() != 2) {
    return std::nullopt;
  }
  const json& first = pre["pretokenizers"][0];
  const json& second = pre["pretokenizers"][1];
  // Sequence[Split(Qwen2 regex, Isolated), ByteLevel(add_prefix_space=false, use_regex=false)]
  if (first.is_object() && first.value("type", "") == "Split" &&
      first.value("behavior", "") == "Isolated" && !first.value("invert", true) &&
      first.value("pattern", json()).is_object() &&
      first["pattern"].value("Regex", "") == kQwen2SplitPattern && IsByteLevel(second, false)) {
    return PreTokenizer::kQwen2;
  }
  // Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false, use_regex=true)]
  if (first.is_object() && first.value("type", "") == "Digits" &&
      first.value("individual_digits", false) && IsByteLevel(second, true)) {
    return PreTokenizer::kDigitsGpt2;
  }
  return std::nullopt;
}

void ReadPipeline(const Validator& v, const json& root, TokenizerSpec& spec) {
  const json normalizer = root.value("normalizer", json());
  if (normalizer.is_null()) {
    spec.nfc = false;
  } else if (normalizer.is_object() && normalizer.value("type", "") == "NFC") {
    spec.nfc = true;
  } else {
    v.Fail("unsupported normalizer " + normalizer.dump().substr(0, 80) + " (only NFC or null)");
  }

  const auto pre = ReadPreTokenizer(root.value("pre_tokenizer", json()));
  if (!pre) {
    v.Fail(
        "unsupported pre_tokenizer (only the Qwen2 split regex followed by ByteLevel, or "
        "Digits followed by ByteLevel with its GPT-2 regex)");
  }
  spec.pre_tokenizer = *pre;
  if (spec.pre_tokenizer == PreTokenizer::kDigitsGpt2) {
    // SmolLM2's vocabulary lacks a few byte tokens, which Hugging Face drops without an unk_token.
    if (!root["model"].value("unk_token", json()).is_null()) {
      v.Fail("unsupported model.unk_token with the Digits pre-tokenizer (only null)");
    }
    spec.skip_missing_bytes = true;
  }

  // The ByteLevel decoder maps characters back to bytes; its flags change offsets only.
  const json decoder = root.value("decoder", json());
  if (!decoder.is_object() || decoder.value("type", "") != "ByteLevel") {
    v.Fail("unsupported decoder (only ByteLevel)");
  }
  const json post = root.value("post_processor", json());
  if (!post.is_null() && !(post.is_object() && post.value("type", "") == "ByteLevel")) {
    v.Fail("unsupported post_processor (only ByteLevel or null: no tokens may be added)");
  }
  for (const char* key : {"truncation", "padding"}) {
    if (!root.value(key, json()).is_null())
      v.Fail(std::string("unsupported ") + key + " (must be null)");
  }
}

}  // namespace

TokenizerSpec ParseTokenizerJson(std::string_view json_text, const std::string& name) {
  const Validator v(name);
  json root;
  JsonProblem problem;
  if (!ParseJsonStrict(json_text, root, problem)) {
    v.Fail((problem.kind == JsonProblem::Kind::kMalformed ? "not valid JSON: " : "") +
           problem.message + " (line " + std::to_string(problem.line) + ")");
  }
  if (!root.is_object()) v.Fail("top level must be a JSON object");
  TokenizerSpec spec;
  try {
    ReadModel(v, v.Object(root, "model", "tokenizer"), spec);
    ReadAddedTokens(v, root, spec);
    ReadPipeline(v, root, spec);
  } catch (const json::exception& e) {
    // A value of an unexpected JSON type somewhere not checked field by field.
    v.Fail(std::string("unexpected content: ") + e.what());
  }
  return spec;
}

}  // namespace dv::tok
