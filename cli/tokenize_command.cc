// detverify tokenize: token ids of a text (or the text of ids), for debugging prompts, and --jsonl
// for bulk work (one JSON string per input line -> one JSON array of ids per output line). The
// tokenizer is Qwen3's, an artifact's (tokenizer.gguf or tokenizer.json), or the one a GGUF model
// carries (--gguf).
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "base/file_io.h"
#include "cli/command.h"
#include "cli/model_options.h"
#include "engine/artifact.h"
#include "gguf/model_tokenizer.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace dv::cli {
namespace {

struct TokenizeOptions {
  std::string text, file, ids, jsonl, tokenizer, artifact, gguf;
  bool json = false;
  bool chat = false;
};

void RunTokenize(const TokenizeOptions& o, CommandContext& ctx) {
  const int sources = !o.text.empty() + !o.file.empty() + !o.ids.empty() + !o.jsonl.empty();
  if (sources != 1) throw UsageError("give exactly one of --text, --file, --ids, --jsonl");
  if (!o.gguf.empty() && (!o.tokenizer.empty() || !o.artifact.empty())) {
    throw UsageError("give --gguf or --tokenizer/--artifact, not both");
  }
  // A GGUF's tokenizer and chat template (the model's, or an artifact's tokenizer.gguf), or a
  // tokenizer.json with Qwen3's template (gguf/model_tokenizer.h).
  const gguf::ModelTokenizer model =
      gguf::LoadModelTokenizer(!o.gguf.empty()        ? o.gguf
                               : !o.tokenizer.empty() ? o.tokenizer
                                                      : gguf::TokenizerPathFor(o.artifact));
  const tok::Tokenizer& tk = model.tokenizer;

  if (!o.ids.empty()) {
    const std::vector<int32_t> ids = ParseIds(o.ids, "--ids");
    const std::string text = tk.Decode(ids);
    if (o.json) {
      std::cout << nlohmann::json({{"ids", ids}, {"text", text}})
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    } else {
      std::cout << text << "\n";
    }
    ctx.exit_code = kExitOk;
    return;
  }
  if (!o.jsonl.empty()) {
    std::string contents, why;
    if (!ReadFileBounded(o.jsonl, 256 * kMiB, contents, why))
      throw UsageError(o.jsonl + ": " + why);
    std::istringstream in(contents);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      nlohmann::json s;
      try {
        s = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception&) {
        throw UsageError(o.jsonl + ":" + std::to_string(n) + ": not a JSON string");
      }
      if (!s.is_string())
        throw UsageError(o.jsonl + ":" + std::to_string(n) + ": not a JSON string");
      std::cout << nlohmann::json(tk.Encode(s.get<std::string>())).dump() << "\n";
    }
    ctx.exit_code = kExitOk;
    return;
  }
  std::string text = o.text;
  if (!o.file.empty()) {
    std::string why;
    if (!ReadFileBounded(o.file, 256 * kMiB, text, why)) throw UsageError(o.file + ": " + why);
  }
  if (o.chat) {
    const tok::ChatTemplate& chat = model.Chat();
    text = chat.Render({{"user", text, std::nullopt}}, true, false);
  }
  const std::vector<int32_t> ids = tk.Encode(text);
  if (o.json) {
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id : ids) pieces.push_back(std::string(tk.TokenText(id)));
    std::cout << nlohmann::json({{"ids", ids}, {"tokens", pieces}, {"count", ids.size()}})
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? "," : "") << ids[i];
    std::cout << "\n";
  }
  ctx.exit_code = kExitOk;
}

}  // namespace

void SetupTokenizeCommand(CLI::App& app, CommandContext& ctx) {
  auto opt = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "token ids of a text, or the text of ids (Qwen3's tokenizer, or a GGUF model's)");
  cmd->add_option("--text", opt->text, "text to encode");
  cmd->add_option("--file", opt->file, "file whose contents to encode");
  cmd->add_option("--ids", opt->ids, "comma-separated ids to decode");
  cmd->add_option("--jsonl", opt->jsonl,
                  "file of JSON strings, one per line: print one id array per line");
  cmd->add_flag("--chat", opt->chat,
                "wrap the text as a user turn of the chat template (the GGUF's, else Qwen3's)");
  cmd->add_flag("--json", opt->json, "print JSON (ids and token spellings)");
  cmd->add_option("--tokenizer", opt->tokenizer,
                  "tokenizer.json to use (default: the artifact's, else Qwen3's)");
  cmd->add_option(
      "--artifact", opt->artifact,
      "use this artifact's tokenizer (tokenizer.gguf or tokenizer.json) when it has one");
  cmd->add_option("--gguf", opt->gguf, "use the tokenizer and chat template of this GGUF model");
  cmd->callback([opt, &ctx]() { RunTokenize(*opt, ctx); });
}

}  // namespace dv::cli
