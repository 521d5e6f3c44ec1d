#include "harness/scenario.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/canonical_json.h"
#include "base/file_io.h"

namespace dv::harness {
namespace {

// Whether a plain (unquoted) scalar resolves to something other than a string under YAML 1.2's
// core schema: null, a boolean, an integer or a float.
bool IsPlainNonString(const std::string& s) {
  static const std::set<std::string> kWords = {"",      "~",     "null",  "Null",  "NULL",  "true",
                                               "True",  "TRUE",  "false", "False", "FALSE", ".inf",
                                               ".Inf",  ".INF",  "+.inf", "+.Inf", "+.INF", "-.inf",
                                               "-.Inf", "-.INF", ".nan",  ".NaN",  ".NAN"};
  if (kWords.count(s)) return true;
  size_t i = s[0] == '-' || s[0] == '+' ? 1 : 0;
  if (i == s.size()) return false;
  if (s.compare(i, 2, "0x") == 0 || s.compare(i, 2, "0o") == 0) {
    return s.size() > i + 2;  // 0x1F, 0o17 (yaml-cpp's lenient reading; never a name anyway)
  }
  bool digits = false, dot = false, exponent = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      digits = true;
    } else if (c == '.' && !dot && !exponent) {
      dot = true;
    } else if ((c == 'e' || c == 'E') && digits && !exponent) {
      exponent = true;
      if (i + 1 < s.size() && (s[i + 1] == '+' || s[i + 1] == '-')) ++i;
      digits = false;
    } else {
      return false;
    }
  }
  return digits;
}

// Parser events ignored except where a document starts.
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { line = mark.line + 1; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
  int line = 0;
};

// The line where a second document starts, or 0 when `text` holds one document (or none). Two
// documents at most are parsed: YAML::LoadAll (yaml-cpp 0.7) never returns on some malformed
// streams, reporting empty documents without end (found by fuzz_scenario,
// tests/fuzz/corpus/scenario/loadall-endless.yaml).
int SecondDocumentLine(const std::string& text) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentStarts starts;
  if (!parser.HandleNextDocument(starts)) return 0;
  starts.line = 0;
  if (!parser.HandleNextDocument(starts)) return 0;
  return starts.line > 0 ? starts.line : 1;
}

// Reads one YAML mapping, allowing only `allowed` keys; every error names file:line.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void Fail(const YAML::Node& at, const std::string& what) const {
    const int line = at.IsDefined() ? at.Mark().line + 1 : 0;
    throw ScenarioError(path_ + ":" + std::to_string(line > 0 ? line : 1) + ": " + what);
  }

  // A mapping whose keys are strings, each once. yaml-cpp keeps both entries of a key written
  // twice and answers n[key] with the first, where other YAML readers take the last: refused, so
  // that the file means one thing.
  void ExpectMap(const YAML::Node& n, const std::string& what) const {
    if (!n.IsMap()) Fail(n, what + " must be a mapping");
    std::map<std::string, int> lines;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) Fail(kv.first, "a key in " + what + " must be a string");
      const std::string key = kv.first.as<std::string>();
      const int line = kv.first.Mark().line + 1;
      if (const auto [it, fresh] = lines.emplace(key, line); !fresh) {
        Fail(kv.first, "duplicate key '" + key + "' in " + what + " (first at line " +
                           std::to_string(it->second) + ")");
      }
    }
  }

  void OnlyKeys(const YAML::Node& n, const std::string& what,
                const std::set<std::string>& allowed) const {
    ExpectMap(n, what);
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      if (!allowed.count(key)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        Fail(kv.first, "unknown key '" + key + "' in " + what + " (allowed: " + list + ")");
      }
    }
  }

  std::string Str(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) Fail(n, what + " must be a string");
    return n.as<std::string>();
  }

  // A name: a string as YAML means it (a plain 123, true or null is a number, a boolean or
  // nothing, not a name; quote it to mean the text), without control characters.
  std::string Name(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) Fail(n, what + " must be a string");
    const std::string s = n.as<std::string>();
    if (n.Tag() == "?" && IsPlainNonString(s)) {
      Fail(n,
           what + " must be a string, got the plain scalar " + s + " (quote it if it is a name)");
    }
    for (const char ch : s) {
      const auto byte = static_cast<unsigned char>(ch);
      if (byte < 0x20 || byte == 0x7f) Fail(n, what + " must not contain control characters");
    }
    return s;
  }

  int64_t Int(const YAML::Node& n, const std::string& what, int64_t lo, int64_t hi) const {
    if (!n.IsScalar()) Fail(n, what + " must be an integer");
    int64_t v = 0;
    try {
      const std::string s = n.as<std::string>();
      size_t used = 0;
      v = std::stoll(s, &used, 10);
      if (used != s.size()) throw std::invalid_argument(s);
    } catch (const std::exception&) {
      Fail(n, what + " must be an integer, got '" + n.as<std::string>() + "'");
    }
    if (v < lo || v > hi) {
      Fail(n, what + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                  std::to_string(v));
    }
    return v;
  }

  bool Bool(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) Fail(n, what + " must be true or false");
    const std::string s = n.as<std::string>();
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    Fail(n, what + " must be true or false, got '" + s + "'");
  }

  std::string OneOf(const YAML::Node& n, const std::string& what,
                    const std::set<std::string>& values) const {
    const std::string s = Str(n, what);
    if (!values.count(s)) {
      std::string list;
      for (const auto& v : values) list += (list.empty() ? "" : " | ") + v;
      Fail(n, what + " must be one of " + list + ", got '" + s + "'");
    }
    return s;
  }

  // One of an enum's spellings (base/run_kinds.h).
  template <typename E>
  E Kind(const YAML::Node& n, const std::string& what) const {
    std::set<std::string> names;
    for (std::string_view name : KindSpellings<E>::kNames) names.emplace(name);
    return *ParseKind<E>(OneOf(n, what, names));
  }

  std::pair<int64_t, int64_t> Range(const YAML::Node& n, const std::string& what, int64_t lo,
                                    int64_t hi) const {
    if (!n.IsSequence() || n.size() != 2) Fail(n, what + " must be a list [min, max]");
    const int64_t a = Int(n[0], what + "[0]", lo, hi), b = Int(n[1], what + "[1]", lo, hi);
    if (a > b) Fail(n, what + ": min " + std::to_string(a) + " exceeds max " + std::to_string(b));
    return {a, b};
  }

  std::string Hex(const YAML::Node& n, const std::string& what, size_t min_len) const {
    const std::string s = Str(n, what);
    if (s.size() < min_len || s.size() > 64 ||
        s.find_first_not_of("0123456789abcdef") != std::string::npos) {
      Fail(n, what + " must be " + std::to_string(min_len) + " to 64 lowercase hex digits");
    }
    return s;
  }

 private:
  std::string path_;
};

constexpr int64_t kMaxSteps = 1 << 20;
constexpr size_t kMaxScenarioBytes = 16 * kMiB;

void ParseModel(const Reader& r, const YAML::Node& n, ModelSpec& m) {
  r.OnlyKeys(n, "model", {"artifact", "hf", "gguf", "prepare", "fallback", "fallback_seed"});
  if (n["artifact"]) m.artifact = r.Str(n["artifact"], "model.artifact");
  if (n["hf"]) m.hf = r.Str(n["hf"], "model.hf");
  if (n["gguf"]) m.gguf = r.Str(n["gguf"], "model.gguf");
  if (!m.hf.empty() && !m.gguf.empty())
    r.Fail(n["gguf"], "model.hf and model.gguf both name the float rows' model; give one");
  if (const YAML::Node p = n["prepare"]) {
    if (!p.IsMap()) r.Fail(p, "model.prepare must be a mapping { calib, samples, len }");
    r.OnlyKeys(p, "model.prepare", {"calib", "samples", "len"});
    if (!p["calib"]) r.Fail(p, "model.prepare needs calib (a calibration text file)");
    m.prepare = true;
    m.prepare_calib = r.Str(p["calib"], "model.prepare.calib");
    if (p["samples"]) m.prepare_samples = r.Int(p["samples"], "model.prepare.samples", 1, 4096);
    if (p["len"]) m.prepare_len = r.Int(p["len"], "model.prepare.len", 1, 1 << 16);
    if (!m.artifact.empty())
      r.Fail(p, "model.artifact and model.prepare both name the int8 rows' model; give one");
    if (m.hf.empty() && m.gguf.empty())
      r.Fail(p, "model.prepare needs the float model it prepares (model.gguf or model.hf)");
  }
  if (n["fallback"]) {
    const std::string f = r.Str(n["fallback"], "model.fallback");
    const size_t colon = f.find(':');
    m.fallback_kind = f.substr(0, colon == std::string::npos ? 0 : colon);
    if (colon == std::string::npos ||
        (m.fallback_kind != "synthetic" && m.fallback_kind != "prepared")) {
      r.Fail(n["fallback"],
             "model.fallback must be synthetic:<preset> or prepared:<preset>, got '" + f + "'");
    }
    m.fallback_preset = f.substr(colon + 1);
    if (m.fallback_preset != "qwen3-tiny" && m.fallback_preset != "qwen3-0.6b") {
      r.Fail(n["fallback"], "unknown " + m.fallback_kind + " preset '" + m.fallback_preset +
                                "' (known: qwen3-tiny, qwen3-0.6b)");
    }
  }
  if (n["fallback_seed"])
    m.fallback_seed =
        static_cast<uint64_t>(r.Int(n["fallback_seed"], "model.fallback_seed", 0, INT64_MAX));
  if (m.artifact.empty() && m.hf.empty() && m.gguf.empty() && m.fallback_preset.empty())
    r.Fail(n,
           "model needs an artifact, an hf checkpoint or a gguf file, a fallback, or some of them");
}

void ParsePrompt(const Reader& r, const YAML::Node& n, PromptSpec& p) {
  r.OnlyKeys(n, "prompt", {"ids", "text", "text_file", "chat", "first_tokens", "expect_ids"});
  int sources = 0;
  if (n["ids"]) {
    ++sources;
    if (!n["ids"].IsSequence() || n["ids"].size() == 0)
      r.Fail(n["ids"], "prompt.ids must be a non-empty list of token ids");
    for (const auto& id : n["ids"])
      p.ids.push_back(static_cast<int32_t>(r.Int(id, "prompt.ids entry", 0, INT32_MAX)));
  }
  if (n["text"]) {
    ++sources;
    p.text = r.Str(n["text"], "prompt.text");
  }
  if (n["text_file"]) {
    ++sources;
    p.text_file = r.Str(n["text_file"], "prompt.text_file");
  }
  if (sources != 1) r.Fail(n, "prompt needs exactly one of ids, text, text_file");
  if (n["chat"]) p.chat = r.Bool(n["chat"], "prompt.chat");
  if (p.chat && !p.ids.empty()) r.Fail(n["chat"], "prompt.chat applies to text, not to ids");
  if (n["first_tokens"])
    p.first_tokens = r.Int(n["first_tokens"], "prompt.first_tokens", 1, kMaxSteps);
  if (n["expect_ids"]) {
    if (!p.ids.empty()) r.Fail(n["expect_ids"], "prompt.expect_ids checks a text prompt, not ids");
    if (!n["expect_ids"].IsSequence())
      r.Fail(n["expect_ids"], "prompt.expect_ids must be a list of token ids");
    for (const auto& id : n["expect_ids"]) {
      p.expect_ids.push_back(
          static_cast<int32_t>(r.Int(id, "prompt.expect_ids entry", 0, INT32_MAX)));
    }
  }
}

void ParseCoPrompts(const Reader& r, const YAML::Node& n, CoPromptSpec& c) {
  r.OnlyKeys(n, "co_prompts", {"seed", "count", "length", "vocab"});
  if (n["seed"]) c.seed = static_cast<uint64_t>(r.Int(n["seed"], "co_prompts.seed", 0, INT64_MAX));
  if (n["count"]) c.count = r.Int(n["count"], "co_prompts.count", 0, 4096);
  if (n["length"])
    std::tie(c.min_len, c.max_len) = r.Range(n["length"], "co_prompts.length", 1, kMaxSteps);
  if (n["vocab"])
    std::tie(c.min_id, c.max_id) = r.Range(n["vocab"], "co_prompts.vocab", 0, INT32_MAX);
}

Configuration ParseConfiguration(const Reader& r, const YAML::Node& n, size_t index) {
  const std::string what = "configurations[" + std::to_string(index) + "]";
  r.OnlyKeys(n, what,
             {"name", "engine", "backend", "dtype", "batch", "split", "cuda_graphs", "timeout_s",
              "threads", "platform"});
  Configuration c;
  c.line = n.Mark().line + 1;
  if (!n["name"]) r.Fail(n, what + " needs a name");
  c.name = r.Name(n["name"], what + ".name");
  if (c.name.empty() || c.name.find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
                            std::string::npos) {
    r.Fail(n["name"], what + ".name must be letters, digits, '-', '_' or '.'");
  }
  // No default engine: a row's engine decides what its hash means (int8 rows must agree, float
  // rows are contrast), so each configuration says which it is.
  if (!n["engine"]) r.Fail(n, c.name + " needs an engine (int8 or float)");
  c.engine = r.Kind<EngineKind>(n["engine"], c.name + ".engine");
  if (n["backend"]) c.backend = r.Kind<BackendKind>(n["backend"], c.name + ".backend");
  if (n["dtype"]) {
    if (c.engine != EngineKind::kFloat) {
      r.Fail(n["dtype"], c.name + ".dtype applies to engine: float only");
    }
    c.dtype = r.Kind<FloatDType>(n["dtype"], c.name + ".dtype");
  } else if (c.engine == EngineKind::kFloat) {
    c.dtype = c.backend == BackendKind::kCuda ? FloatDType::kFp16 : FloatDType::kFp32;
  }
  if (n["batch"]) {
    const YAML::Node b = n["batch"];
    r.OnlyKeys(b, c.name + ".batch", {"size", "co_prompts", "position"});
    if (b["size"]) c.batch.size = r.Int(b["size"], c.name + ".batch.size", 1, 4096);
    if (b["co_prompts"]) c.batch.co_prompts = r.Bool(b["co_prompts"], c.name + ".batch.co_prompts");
    if (b["position"]) c.batch.position = r.Int(b["position"], c.name + ".batch.position", 0, 4095);
    if (c.batch.position >= c.batch.size) {
      r.Fail(b, c.name + ".batch.position " + std::to_string(c.batch.position) +
                    " is outside a batch of " + std::to_string(c.batch.size));
    }
    if (c.batch.size > 1 && !c.batch.co_prompts) {
      r.Fail(b, c.name + ".batch.size > 1 needs co_prompts: true");
    }
  }
  if (n["split"]) {
    const YAML::Node s = n["split"];
    r.OnlyKeys(s, c.name + ".split", {"prefill"});
    if (!s["prefill"]) r.Fail(s, c.name + ".split needs prefill: P");
    c.split_prefill = r.Int(s["prefill"], c.name + ".split.prefill", 1, kMaxSteps);
    c.split_line = s["prefill"].Mark().line + 1;
  }
  if (n["cuda_graphs"]) {
    c.cuda_graphs = r.Bool(n["cuda_graphs"], c.name + ".cuda_graphs");
    if (c.cuda_graphs && c.backend != BackendKind::kCuda)
      r.Fail(n["cuda_graphs"], c.name + ".cuda_graphs needs backend: cuda");
  }
  if (n["timeout_s"]) c.timeout_s = r.Int(n["timeout_s"], c.name + ".timeout_s", 1, 7 * 24 * 3600);
  if (n["threads"]) c.threads = static_cast<int>(r.Int(n["threads"], c.name + ".threads", 0, 1024));
  if (n["platform"]) {
    c.platform = r.OneOf(n["platform"], c.name + ".platform", {"aarch64", "s390x"});
    if (c.engine != EngineKind::kInt8 || c.backend == BackendKind::kCuda) {
      r.Fail(n["platform"],
             c.name + ".platform applies to engine: int8 with backend reference or cpu");
    }
  }
  return c;
}

}  // namespace

const Configuration* Scenario::Find(const std::string& config_name) const {
  for (const Configuration& c : configurations) {
    if (c.name == config_name) return &c;
  }
  return nullptr;
}

Scenario LoadScenario(const std::string& path) {
  std::string text, why;
  if (!ReadFileBounded(path, kMaxScenarioBytes, text, why)) {
    throw ScenarioError(path + ":1: cannot open the file" +
                        (why == "no such file" ? "" : " (" + why + ")"));
  }
  return ParseScenario(text, path);
}

Scenario ParseScenario(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
    // One document only: YAML::Load ignores a second one ("---"), which another reader could
    // take instead.
    if (const int line = SecondDocumentLine(text); line > 0) {
      throw ScenarioError(path + ":" + std::to_string(line) +
                          ": a second YAML document; a scenario is one document");
    }
  } catch (const YAML::Exception& e) {
    throw ScenarioError(path + ":" + std::to_string(e.mark.line + 1) +
                        ": malformed YAML: " + e.msg);
  }
  const Reader r(path);
  if (!root.IsMap()) r.Fail(root, "the scenario must be a YAML mapping");
  r.OnlyKeys(root, "the scenario",
             {"name", "model", "prompt", "generate", "co_prompts", "expect", "configurations",
              "timeout_s"});
  Scenario s;
  s.path = path;
  try {
    for (const char* key : {"name", "model", "prompt", "generate", "configurations"}) {
      if (!root[key]) r.Fail(root, std::string("missing required key '") + key + "'");
    }
    s.name = r.Name(root["name"], "name");
    if (s.name.empty()) r.Fail(root["name"], "name must not be empty");
    ParseModel(r, root["model"], s.model);
    ParsePrompt(r, root["prompt"], s.prompt);
    r.OnlyKeys(root["generate"], "generate", {"max_new", "show_text"});
    if (root["generate"]["show_text"])
      s.show_text = r.Bool(root["generate"]["show_text"], "generate.show_text");
    if (!root["generate"]["max_new"]) r.Fail(root["generate"], "generate needs max_new");
    s.max_new = r.Int(root["generate"]["max_new"], "generate.max_new", 1, kMaxSteps);
    s.lines.max_new = root["generate"]["max_new"].Mark().line + 1;
    s.lines.prompt = root["prompt"].Mark().line + 1;
    if (root["co_prompts"] && root["co_prompts"].IsMap()) {
      const YAML::Node co = root["co_prompts"];
      s.lines.co_prompt_length = (co["length"] ? co["length"] : co).Mark().line + 1;
      if (co["vocab"]) s.lines.co_prompt_vocab = co["vocab"].Mark().line + 1;
    }
    if (root["co_prompts"]) ParseCoPrompts(r, root["co_prompts"], s.co_prompts);
    if (root["timeout_s"]) s.timeout_s = r.Int(root["timeout_s"], "timeout_s", 1, 7 * 24 * 3600);
    if (root["expect"]) {
      if (!root["expect"].IsSequence()) r.Fail(root["expect"], "expect must be a list");
      for (const auto& e : root["expect"]) {
        r.OnlyKeys(e, "expect entry", {"artifact", "steps", "logits", "tokens"});
        verdict::ExpectedHashes x;
        if (!e["artifact"] || !e["logits"] || !e["tokens"])
          r.Fail(e, "expect entry needs artifact, logits and tokens");
        x.artifact = r.Hex(e["artifact"], "expect.artifact", 12);
        x.logits = r.Hex(e["logits"], "expect.logits", 12);
        x.tokens = r.Hex(e["tokens"], "expect.tokens", 12);
        // A run records max_new steps: more could never be compared.
        x.steps = e["steps"] ? r.Int(e["steps"], "expect.steps", 1, s.max_new) : s.max_new;
        s.expect.push_back(x);
      }
    }
    const YAML::Node configs = root["configurations"];
    if (!configs.IsSequence() || configs.size() == 0)
      r.Fail(configs, "configurations must be a non-empty list");
    std::map<std::string, int> seen;
    for (size_t i = 0; i < configs.size(); ++i) {
      Configuration c = ParseConfiguration(r, configs[i], i);
      if (auto it = seen.find(c.name); it != seen.end()) {
        r.Fail(configs[i]["name"], "duplicate configuration name '" + c.name + "' (first at line " +
                                       std::to_string(it->second) + ")");
      }
      seen[c.name] = c.line;
      // An ids prompt's length is known here; a text prompt's once tokenized (CheckAgainstModel).
      if (const int64_t len = s.prompt.first_tokens > 0
                                  ? std::min<int64_t>(s.prompt.first_tokens,
                                                      static_cast<int64_t>(s.prompt.ids.size()))
                                  : static_cast<int64_t>(s.prompt.ids.size());
          !s.prompt.ids.empty() && c.split_prefill > len) {
        r.Fail(configs[i]["split"]["prefill"],
               c.name + ".split.prefill " + std::to_string(c.split_prefill) +
                   " is longer than the prompt (" + std::to_string(len) + " tokens)");
      }
      if (c.timeout_s == 0) c.timeout_s = s.timeout_s;
      s.configurations.push_back(c);
    }
  } catch (const YAML::Exception& e) {
    throw ScenarioError(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return s;
}

std::string CanonicalScenarioText(const Scenario& s) {
  nlohmann::json j;
  j["name"] = s.name;
  j["model"] = {{"artifact", s.model.artifact},
                {"fallback", s.model.fallback_preset},
                {"fallback_seed", s.model.fallback_seed}};
  // Only when given: the identity of a scenario without a checkpoint stays what it was.
  if (!s.model.hf.empty()) j["model"]["hf"] = s.model.hf;
  if (!s.model.gguf.empty()) j["model"]["gguf"] = s.model.gguf;
  if (s.model.prepare) {
    j["model"]["prepare"] = {{"calib", s.model.prepare_calib},
                             {"samples", s.model.prepare_samples},
                             {"len", s.model.prepare_len}};
  }
  // Only when not the default, for the same reason.
  if (s.model.fallback_kind != "synthetic") j["model"]["fallback_kind"] = s.model.fallback_kind;
  j["prompt"] = {{"ids", s.prompt.ids},
                 {"text", s.prompt.text},
                 {"text_file", s.prompt.text_file},
                 {"chat", s.prompt.chat},
                 {"first_tokens", s.prompt.first_tokens},
                 {"expect_ids", s.prompt.expect_ids}};
  j["max_new"] = s.max_new;  // (generate.show_text changes what is printed, not what runs)
  j["co_prompts"] = {{"seed", s.co_prompts.seed},
                     {"count", s.co_prompts.count},
                     {"length", {s.co_prompts.min_len, s.co_prompts.max_len}},
                     {"vocab", {s.co_prompts.min_id, s.co_prompts.max_id}}};
  j["expect"] = nlohmann::json::array();
  for (const auto& e : s.expect) {
    j["expect"].push_back(
        {{"artifact", e.artifact}, {"steps", e.steps}, {"logits", e.logits}, {"tokens", e.tokens}});
  }
  j["configurations"] = nlohmann::json::array();
  for (const auto& c : s.configurations) {
    // dtype is "" for int8 rows, as it always was: the text is the scenario's identity.
    const std::string dtype(c.engine == EngineKind::kFloat ? KindName(c.dtype) : "");
    j["configurations"].push_back({{"name", c.name},
                                   {"engine", KindName(c.engine)},
                                   {"backend", KindName(c.backend)},
                                   {"dtype", dtype},
                                   {"batch",
                                    {{"size", c.batch.size},
                                     {"co_prompts", c.batch.co_prompts},
                                     {"position", c.batch.position}}},
                                   {"split_prefill", c.split_prefill},
                                   {"cuda_graphs", c.cuda_graphs},
                                   {"timeout_s", c.timeout_s},
                                   {"threads", c.threads}});
    // Only when set, so that the identity of scenarios without emulated rows stays as it was.
    if (!c.platform.empty()) j["configurations"].back()["platform"] = c.platform;
  }
  return CanonicalJson(j);
}

}  // namespace dv::harness
