#include "gguf/gguf_tokenizer.h"

#include <limits>
#include <unordered_map>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace dv::gguf {
namespace {

constexpr int64_t kControl = 3;
constexpr int64_t kUserDefined = 4;

// Whether every code point of `token` is one of the 256 byte-alphabet images (GPT-2's spelling).
bool InByteAlphabet(std::string_view token) {
  if (!tok::IsValidUtf8(token)) return false;
  size_t pos = 0;
  while (pos < token.size()) {
    char32_t cp = 0;
    pos += tok::DecodeUtf8At(token, pos, cp);
    if (tok::UnicodeToByte(cp) < 0) return false;
  }
  return true;
}

int32_t OptionalId(const GgufFile& f, std::string_view key, size_t vocab) {
  const int64_t id = f.GetIntOr(key, -1);
  if (id < -1 || id >= static_cast<int64_t>(vocab)) {
    f.Fail("metadata " + std::string(key) + " = " + std::to_string(id) + " is not a token id");
  }
  return static_cast<int32_t>(id);
}

}  // namespace

tok::TokenizerSpec GgufTokenizerSpec(const GgufFile& f) {
  const std::string_view model = f.GetStringOr("tokenizer.ggml.model", "");
  if (model != "gpt2") {
    f.Fail(model.empty() ? "metadata tokenizer.ggml.model is missing (the file has no tokenizer)"
                         : "tokenizer.ggml.model \"" + std::string(model) +
                               "\" is not supported (only \"gpt2\", byte-level BPE)");
  }
  const std::string_view pre = f.GetStringOr("tokenizer.ggml.pre", "");
  tok::TokenizerSpec spec;
  if (pre == "smollm") {
    spec.pre_tokenizer = tok::PreTokenizer::kDigitsGpt2;
    spec.nfc = false;
    // SmolLM2's tokenizer.json has no unk_token: bytes without a token are dropped.
    spec.skip_missing_bytes = true;
  } else if (pre.empty()) {
    f.Fail(
        "metadata tokenizer.ggml.pre is missing (it names the pre-tokenizer; only \"smollm\" "
        "is supported)");
  } else {
    f.Fail("tokenizer.ggml.pre \"" + std::string(pre) +
           "\" is not supported (only \"smollm\"; each pre-tokenizer is checked against Hugging "
           "Face before it is accepted)");
  }
  const std::vector<std::string_view>& tokens = f.GetStringArray("tokenizer.ggml.tokens");
  std::vector<int64_t> types(tokens.size(), 1);
  if (f.Find("tokenizer.ggml.token_type") != nullptr) {
    types = f.GetIntArray("tokenizer.ggml.token_type");
    if (types.size() != tokens.size()) {
      f.Fail("tokenizer.ggml.token_type has " + std::to_string(types.size()) + " entries for " +
             std::to_string(tokens.size()) + " tokens");
    }
  }
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() - 1)) {
    f.Fail("tokenizer.ggml.tokens has too many tokens");
  }
  std::unordered_map<std::string, int32_t> seen;
  seen.reserve(tokens.size());
  spec.vocab.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    const std::string_view token = tokens[i];
    const bool byte_level = InByteAlphabet(token);
    // A byte-level vocabulary spells every entry in the byte alphabet; an entry that is not is
    // respelled from its UTF-8 bytes, as transformers' GGUF loader does. A CONTROL or USER_DEFINED
    // token outside the alphabet is then not added as a whole-match token (transformers adds only
    // those whose spelling is in its vocabulary), so an added token's text is always its spelling.
    std::string spelled = byte_level ? std::string(token) : tok::BytesToByteLevel(token);
    if (byte_level && (types[i] == kControl || types[i] == kUserDefined)) {
      spec.added_tokens.push_back({std::string(token), id, types[i] == kControl});
    }
    if (const auto [it, fresh] = seen.emplace(spelled, id); !fresh) {
      f.Fail("tokenizer.ggml.tokens has \"" + spelled + "\" twice (ids " +
             std::to_string(it->second) + " and " + std::to_string(id) + ")");
    }
    spec.vocab.emplace_back(std::move(spelled), id);
  }
  if (f.Find("tokenizer.ggml.merges") != nullptr) {
    const std::vector<std::string_view>& merges = f.GetStringArray("tokenizer.ggml.merges");
    spec.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      const std::string_view m = merges[i];
      const size_t space = m.find(' ');
      if (space == std::string_view::npos || space == 0 || space + 1 == m.size() ||
          m.find(' ', space + 1) != std::string_view::npos) {
        f.Fail("tokenizer.ggml.merges[" + std::to_string(i) +
               "] is not two tokens separated by one space");
      }
      spec.merges.emplace_back(std::string(m.substr(0, space)), std::string(m.substr(space + 1)));
    }
  }
  return spec;
}

GgufTokenizer LoadGgufTokenizer(const GgufFile& f) {
  tok::TokenizerSpec spec = GgufTokenizerSpec(f);
  const size_t vocab = spec.vocab.size();
  GgufTokenizer t(tok::Tokenizer::FromSpec(std::move(spec), f.path()));
  t.model = std::string(f.GetString("tokenizer.ggml.model"));
  t.pre = std::string(f.GetString("tokenizer.ggml.pre"));
  t.bos_id = OptionalId(f, "tokenizer.ggml.bos_token_id", vocab);
  t.eos_id = OptionalId(f, "tokenizer.ggml.eos_token_id", vocab);
  t.unk_id = OptionalId(f, "tokenizer.ggml.unknown_token_id", vocab);
  t.pad_id = OptionalId(f, "tokenizer.ggml.padding_token_id", vocab);
  t.add_bos = f.GetBoolOr("tokenizer.ggml.add_bos_token", false);
  t.add_eos = f.GetBoolOr("tokenizer.ggml.add_eos_token", false);
  t.chat_template_source = std::string(f.GetStringOr("tokenizer.chat_template", ""));
  if (!t.chat_template_source.empty()) {
    try {
      t.chat = tok::ChatTemplate::FromJinja(t.chat_template_source, f.path());
    } catch (const tok::TokenizerError&) {
      // Left empty: RequireChatTemplate reports it when a chat is actually rendered.
    }
  }
  return t;
}

const tok::ChatTemplate& RequireChatTemplate(const GgufTokenizer& t, const GgufFile& f) {
  if (t.chat) return *t.chat;
  if (t.chat_template_source.empty()) f.Fail("the file has no tokenizer.chat_template");
  try {
    tok::ChatTemplate::FromJinja(t.chat_template_source, f.path());
  } catch (const tok::TokenizerError& e) {
    throw GgufError(e.what());
  }
  f.Fail("unsupported chat template");
}

}  // namespace dv::gguf
