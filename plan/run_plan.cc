#include "plan/run_plan.h"

#include <set>

#include "base/canonical_json.h"

namespace dv::plan {
namespace {

using Json = nlohmann::json;

constexpr std::array<std::string_view, 4> kModelSources = {"artifact", "synthetic", "hf", "gguf"};

// Reads one object of a plan: every key must be known, every value of its type.
class Fields {
 public:
  Fields(const Json& object, std::string where, const std::string& source,
         std::set<std::string> known)
      : object_(object), where_(std::move(where)), source_(source) {
    if (!object_.is_object()) Fail(where_ + " must be an object");
    for (const auto& item : object_.items()) {
      if (known.count(item.key()) == 0) Fail("unknown key " + Key(item.key()));
    }
  }

  [[noreturn]] void Fail(const std::string& what) const {
    throw PlanError(source_ + ": run plan: " + what);
  }

  const Json& Get(const std::string& key) const {
    const auto it = object_.find(key);
    if (it == object_.end()) Fail("missing key " + Key(key));
    return *it;
  }
  bool Has(const std::string& key) const { return object_.contains(key); }
  int64_t Int(const std::string& key, int64_t lo, int64_t hi) const {
    const Json& v = Get(key);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)) {
      Fail(Key(key) + " must be an integer");
    }
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) {
      Fail(Key(key) + " = " + std::to_string(x) + " is outside [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]");
    }
    return x;
  }
  uint64_t Unsigned(const std::string& key) const {
    const Json& v = Get(key);
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) {
      Fail(Key(key) + " must be a non-negative integer");
    }
    return v.get<uint64_t>();
  }
  std::string Str(const std::string& key) const {
    const Json& v = Get(key);
    if (!v.is_string()) Fail(Key(key) + " must be a string");
    return v.get<std::string>();
  }
  bool Bool(const std::string& key) const {
    const Json& v = Get(key);
    if (!v.is_boolean()) Fail(Key(key) + " must be true or false");
    return v.get<bool>();
  }
  template <typename E>
  E Kind(const std::string& key) const {
    const std::string text = Str(key);
    const std::optional<E> value = ParseKind<E>(text);
    if (!value) Fail(Key(key) + " '" + text + "' is not one of " + KindList<E>(", "));
    return *value;
  }
  std::vector<int32_t> Ids(const Json& list, const std::string& what) const {
    if (!list.is_array()) Fail(what + " must be a list of token ids");
    std::vector<int32_t> ids;
    ids.reserve(list.size());
    for (const Json& id : list) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
        Fail(what + " holds a value that is not a token id");
      }
      ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    return ids;
  }
  std::string Key(const std::string& key) const {
    return where_.empty() ? key : where_ + "." + key;
  }

 private:
  const Json& object_;
  std::string where_;
  const std::string& source_;
};

}  // namespace

std::string_view ModelSourceName(ModelSource source) {
  return kModelSources[static_cast<size_t>(source)];
}

nlohmann::json PlanJson(const RunPlan& p) {
  Json co = Json::array();
  for (const auto& row : p.batch.co_prompt_ids) co.push_back(row);
  Json j = {
      {"plan_version", kRunPlanVersion},
      {"scenario", {{"name", p.scenario_name}, {"id", p.scenario_id}}},
      {"name", p.name},
      {"engine", KindName(p.engine)},
      {"backend", KindName(p.backend)},
      {"isa", p.isa},
      {"threads", p.threads},
      {"cuda_graphs", p.cuda_graphs},
      {"model",
       {{"source", ModelSourceName(p.model.source)},
        {"path", p.model.path},
        {"preset", p.model.preset},
        {"seed", p.model.seed},
        {"sha256", p.model.sha256},
        {"config_sha256", p.model.config_sha256},
        {"label", p.model.label},
        {"synthetic", p.model.synthetic}}},
      {"prompt", {{"ids", p.prompt.ids}, {"tokenizer_sha256", p.prompt.tokenizer_sha256}}},
      {"batch",
       {{"size", p.batch.size},
        {"position", p.batch.position},
        {"co_prompts", p.batch.co_prompts},
        {"co_prompt_ids", std::move(co)}}},
      {"split_prefill", p.split_prefill},
      {"max_new", p.max_new},
      {"timeout_s", p.timeout_s},
      {"spec_version", p.spec_version},
  };
  // Set only where they apply, as in the configuration JSON of earlier rows.
  if (p.engine == EngineKind::kFloat) j["dtype"] = KindName(p.dtype);
  if (!p.platform.empty()) j["platform"] = p.platform;
  return j;
}

std::string CanonicalPlanText(const RunPlan& plan) { return CanonicalJson(PlanJson(plan)); }

RunPlan ParsePlan(std::string_view text, const std::string& source) {
  const Json j = Json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) throw PlanError(source + ": run plan: not JSON");
  const Fields top(j, "", source,
                   {"plan_version", "scenario", "name", "engine", "dtype", "backend", "isa",
                    "threads", "cuda_graphs", "platform", "model", "prompt", "batch",
                    "split_prefill", "max_new", "timeout_s", "spec_version"});
  const int64_t version = top.Int("plan_version", 0, INT64_MAX);
  if (version != kRunPlanVersion) {
    top.Fail("plan_version " + std::to_string(version) + ", this build reads version " +
             std::to_string(kRunPlanVersion) + " (parent and child are different builds?)");
  }
  RunPlan p;
  const Fields scenario(top.Get("scenario"), "scenario", source, {"name", "id"});
  p.scenario_name = scenario.Str("name");
  p.scenario_id = scenario.Str("id");
  p.name = top.Str("name");
  if (p.name.empty()) top.Fail("name must not be empty");
  p.engine = top.Kind<EngineKind>("engine");
  if (p.engine == EngineKind::kFloat) p.dtype = top.Kind<FloatDType>("dtype");
  if (p.engine != EngineKind::kFloat && top.Has("dtype")) top.Fail("dtype applies to engine float");
  p.backend = top.Kind<BackendKind>("backend");
  p.isa = top.Str("isa");
  p.threads = top.Int("threads", 1, 4096);
  p.cuda_graphs = top.Bool("cuda_graphs");
  if (top.Has("platform")) {
    p.platform = top.Str("platform");
    if (p.platform != "aarch64" && p.platform != "s390x") {
      top.Fail("platform '" + p.platform + "' is not aarch64 or s390x");
    }
  }
  const Fields model(
      top.Get("model"), "model", source,
      {"source", "path", "preset", "seed", "sha256", "config_sha256", "label", "synthetic"});
  const std::string model_source = model.Str("source");
  bool known_source = false;
  for (size_t i = 0; i < kModelSources.size(); ++i) {
    if (kModelSources[i] == model_source) {
      p.model.source = static_cast<ModelSource>(i);
      known_source = true;
    }
  }
  if (!known_source) model.Fail("model.source '" + model_source + "' is unknown");
  p.model.path = model.Str("path");
  p.model.preset = model.Str("preset");
  p.model.seed = model.Unsigned("seed");
  p.model.sha256 = model.Str("sha256");
  p.model.config_sha256 = model.Str("config_sha256");
  p.model.label = model.Str("label");
  p.model.synthetic = model.Bool("synthetic");
  if (p.model.source == ModelSource::kSynthetic ? p.model.preset.empty() : p.model.path.empty()) {
    model.Fail("model names no " +
               std::string(p.model.source == ModelSource::kSynthetic ? "preset" : "path"));
  }
  const Fields prompt(top.Get("prompt"), "prompt", source, {"ids", "tokenizer_sha256"});
  p.prompt.ids = prompt.Ids(prompt.Get("ids"), "prompt.ids");
  if (p.prompt.ids.empty()) prompt.Fail("prompt.ids must not be empty");
  p.prompt.tokenizer_sha256 = prompt.Str("tokenizer_sha256");
  const Fields batch(top.Get("batch"), "batch", source,
                     {"size", "position", "co_prompts", "co_prompt_ids"});
  p.batch.size = batch.Int("size", 1, 4096);
  p.batch.position = batch.Int("position", 0, p.batch.size - 1);
  p.batch.co_prompts = batch.Bool("co_prompts");
  const Json& co = batch.Get("co_prompt_ids");
  if (!co.is_array()) batch.Fail("batch.co_prompt_ids must be a list");
  for (const Json& row : co) p.batch.co_prompt_ids.push_back(batch.Ids(row, "batch.co_prompt_ids"));
  if (static_cast<int64_t>(p.batch.co_prompt_ids.size()) != p.batch.size - 1) {
    batch.Fail("batch.co_prompt_ids has " + std::to_string(p.batch.co_prompt_ids.size()) +
               " rows for a batch of " + std::to_string(p.batch.size));
  }
  p.split_prefill = top.Int("split_prefill", 0, INT32_MAX);
  p.max_new = top.Int("max_new", 1, INT32_MAX);
  p.timeout_s = top.Int("timeout_s", 1, INT32_MAX);
  p.spec_version = top.Str("spec_version");
  return p;
}

}  // namespace dv::plan
