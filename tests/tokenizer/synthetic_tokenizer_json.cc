#include "tests/tokenizer/synthetic_tokenizer_json.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"

namespace dv::tok::testing {

nlohmann::json SyntheticTokenizerJson(const std::vector<std::string>& extra_tokens,
                                      const nlohmann::json& merges,
                                      const nlohmann::json& added_tokens) {
  using nlohmann::json;
  json vocab = json::object();
  for (unsigned b = 0; b < 256; ++b) {
    std::string token;
    AppendUtf8(ByteToUnicode(static_cast<uint8_t>(b)), token);
    vocab[token] = b;
  }
  int id = 256;
  for (const std::string& token : extra_tokens) vocab[token] = id++;
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", false},
                           {"use_regex", false}};
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added_tokens},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", std::string(kQwen2SplitPattern)}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          byte_level}}}},
      {"post_processor", byte_level},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", merges}}},
  };
}

}  // namespace dv::tok::testing
