#include "tokenizer/tokenizer.h"

#include <lzma.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "base/file_io.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_merges.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/nfc.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/utf8.h"
#include "tokenizer/word_cache.h"

#ifndef DETVERIFY_DEFAULT_TOKENIZER_PATH
#error "DETVERIFY_DEFAULT_TOKENIZER_PATH must be defined by tokenizer/CMakeLists.txt"
#endif

namespace dv::tok {
namespace {

// The bundled tokenizer is xz-compressed (tokenizer/data/); liblzma inflates it in memory.
// Qwen3's tokenizer.json is 11 MB; a bound far above any real tokenizer, and below memory.
constexpr size_t kMaxTokenizerFileBytes = 512 * kMiB;

std::string DecompressXz(const std::string& packed, const std::string& path) {
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK) {
    throw TokenizerError(path + ": cannot start the xz decoder");
  }
  std::string out;
  std::vector<uint8_t> buf(1 << 20);
  strm.next_in = reinterpret_cast<const uint8_t*>(packed.data());
  strm.avail_in = packed.size();
  lzma_ret ret = LZMA_OK;
  while (ret == LZMA_OK) {
    strm.next_out = buf.data();
    strm.avail_out = buf.size();
    ret = lzma_code(&strm, LZMA_FINISH);
    out.append(reinterpret_cast<const char*>(buf.data()), buf.size() - strm.avail_out);
  }
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END) throw TokenizerError(path + ": corrupt or truncated xz data");
  return out;
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

struct Tokenizer::Model {
  std::vector<std::string> text;   // by id, as tokenizer.json spells it; empty if unused
  std::vector<std::string> bytes;  // by id, what the id decodes to
  std::vector<uint8_t> special;    // by id, 1 for special added tokens
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> id_by_text;
  std::array<int32_t, 256> byte_ids{};  // the single-byte tokens BPE starts from
  BpeMerges merges;
  AddedTokenMatcher added;
  bool nfc = false;
  PreTokenizer pre_tokenizer = PreTokenizer::kQwen2;
  mutable WordCache cache;

  void EncodeWord(std::string_view word, std::vector<int32_t>& ids) const;
  void EncodeSegment(std::string_view segment, std::vector<int32_t>& ids) const;
};

void Tokenizer::Model::EncodeWord(std::string_view word, std::vector<int32_t>& ids) const {
  if (cache.Lookup(word, ids)) return;
  std::vector<int32_t> symbols;
  symbols.reserve(word.size());
  for (char c : word) {
    // -1: a byte without a token, dropped as Hugging Face's BPE drops it (skip_missing_bytes).
    const int32_t id = byte_ids[static_cast<unsigned char>(c)];
    if (id >= 0) symbols.push_back(id);
  }
  ApplyMerges(merges, symbols);
  cache.Insert(word, symbols);
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

void Tokenizer::Model::EncodeSegment(std::string_view segment, std::vector<int32_t>& ids) const {
  std::string storage;
  const std::string_view normalized = nfc ? NormalizeNfc(segment, storage) : segment;
  std::vector<std::string_view> pieces;
  SplitPretokens(pre_tokenizer, normalized, pieces);
  for (std::string_view piece : pieces) EncodeWord(piece, ids);
}

Tokenizer::Tokenizer(std::shared_ptr<const Model> model) : model_(std::move(model)) {}

std::string ReadTokenizerText(const std::string& path) {
  std::string contents, why;
  if (!ReadFileBounded(path, kMaxTokenizerFileBytes, contents, why)) {
    if (why == "no such file") {
      throw TokenizerError(path +
                           ": no such file (set DETVERIFY_TOKENIZER to a Qwen3 tokenizer.json)");
    }
    throw TokenizerError(path + ": cannot read the file (" + why + ")");
  }
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".xz") == 0) {
    return DecompressXz(contents, path);
  }
  return contents;
}

Tokenizer Tokenizer::FromFile(const std::string& path) {
  return FromJson(ReadTokenizerText(path), path);
}

Tokenizer Tokenizer::FromJson(std::string_view json_text, const std::string& name) {
  return FromSpec(ParseTokenizerJson(json_text, name), name);
}

Tokenizer Tokenizer::FromSpec(TokenizerSpec spec, const std::string& name) {
  auto model = std::make_shared<Model>();
  model->nfc = spec.nfc;
  model->pre_tokenizer = spec.pre_tokenizer;

  int32_t max_id = -1;
  for (const auto& [token, id] : spec.vocab) max_id = std::max(max_id, id);
  for (const AddedToken& token : spec.added_tokens) max_id = std::max(max_id, token.id);
  const auto size = static_cast<size_t>(max_id + 1);
  model->text.resize(size);
  model->bytes.resize(size);
  model->special.assign(size, 0);

  model->id_by_text.reserve(spec.vocab.size() + spec.added_tokens.size());
  for (auto& [token, id] : spec.vocab) {
    const auto i = static_cast<size_t>(id);
    model->bytes[i] = ByteLevelToBytes(token);
    model->id_by_text.emplace(token, id);
    model->text[i] = std::move(token);
  }
  for (const AddedToken& token : spec.added_tokens) {
    const auto i = static_cast<size_t>(token.id);
    if (!model->text[i].empty() && model->text[i] != token.content) {
      throw TokenizerError(name + ": added token " + token.content + " reuses id " +
                           std::to_string(token.id) + " of vocabulary token " + model->text[i]);
    }
    model->text[i] = token.content;
    // HF's ByteLevel decoder maps added tokens through the byte alphabet too when it can.
    model->bytes[i] = ByteLevelToBytes(token.content);
    model->special[i] = token.special ? 1 : 0;
    // Added tokens shadow vocabulary strings, as in Hugging Face's token_to_id.
    model->id_by_text.insert_or_assign(token.content, token.id);
  }

  const auto vocab_id = [&](const std::string& token) -> int32_t {
    const auto it = model->id_by_text.find(token);
    return it == model->id_by_text.end() ? -1 : it->second;
  };
  for (unsigned b = 0; b < 256; ++b) {
    std::string token;
    AppendUtf8(ByteToUnicode(static_cast<uint8_t>(b)), token);
    model->byte_ids[b] = vocab_id(token);
    if (model->byte_ids[b] < 0 && !spec.skip_missing_bytes) {
      std::ostringstream problem;
      problem << name << ": byte-level token " << token << " (byte 0x" << std::hex << b
              << ") is missing from model.vocab";
      throw TokenizerError(problem.str());
    }
  }

  std::vector<MergeRule> rules;
  rules.reserve(spec.merges.size());
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [left, right] = spec.merges[rank];
    const MergeRule rule{vocab_id(left), vocab_id(right), vocab_id(left + right)};
    if (rule.left < 0 || rule.right < 0 || rule.merged < 0) {
      throw TokenizerError(name + ": model.merges[" + std::to_string(rank) + "] (" + left + " " +
                           right + ") uses a token missing from model.vocab");
    }
    rules.push_back(rule);
  }
  model->merges = BpeMerges(rules);
  model->added = AddedTokenMatcher(spec.added_tokens);
  return Tokenizer(std::move(model));
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text) const {
  std::string repaired;
  if (!IsValidUtf8(text)) {
    repaired = RepairUtf8(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  size_t pos = 0;
  while (pos < text.size()) {
    const auto match = model_->added.FindNext(text, pos);
    const size_t segment_end = match ? match->pos : text.size();
    if (segment_end > pos) model_->EncodeSegment(text.substr(pos, segment_end - pos), ids);
    if (!match) break;
    ids.push_back(match->id);
    pos = match->pos + match->len;
  }
  return ids;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, SpecialTokens special) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= VocabSize()) continue;
    const auto i = static_cast<size_t>(id);
    if (special == SpecialTokens::kSkip && model_->special[i] != 0) continue;
    out += model_->bytes[i];
  }
  return IsValidUtf8(out) ? out : RepairUtf8(out);
}

int32_t Tokenizer::TokenId(std::string_view token) const {
  const auto it = model_->id_by_text.find(token);
  return it == model_->id_by_text.end() ? -1 : it->second;
}

std::string_view Tokenizer::TokenText(int32_t id) const {
  if (id < 0 || id >= VocabSize()) return {};
  return model_->text[static_cast<size_t>(id)];
}

std::string_view Tokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= VocabSize()) return {};
  return model_->bytes[static_cast<size_t>(id)];
}

int32_t Tokenizer::VocabSize() const { return static_cast<int32_t>(model_->text.size()); }

bool Tokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < VocabSize() && model_->special[static_cast<size_t>(id)] != 0;
}

PreTokenizer Tokenizer::pre_tokenizer() const { return model_->pre_tokenizer; }

std::string DefaultTokenizerPath() {
  const char* env = std::getenv("DETVERIFY_TOKENIZER");
  if (env != nullptr && *env != '\0') return env;
  std::error_code ec;
  if (std::filesystem::is_regular_file(DETVERIFY_DEFAULT_TOKENIZER_PATH, ec)) {
    return DETVERIFY_DEFAULT_TOKENIZER_PATH;
  }
  return DETVERIFY_BUNDLED_TOKENIZER_PATH;
}

}  // namespace dv::tok
