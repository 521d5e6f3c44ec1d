#include "plan/plan_result.h"

#include <optional>

#include "base/hash_chain.h"
#include "base/sha256.h"

namespace dv::plan {

using Json = nlohmann::json;

namespace {

// The bytes of lowercase hex `text`; nullopt for odd length or another character.
std::optional<std::vector<uint8_t>> FromHex(const std::string& text) {
  if (text.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::vector<uint8_t> out(text.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = digit(text[2 * i]), lo = digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return out;
}

}  // namespace

nlohmann::json ResultJson(const PlanResult& r) {
  Json steps = Json::array();
  for (const StepHashes& s : r.steps) steps.push_back({s.token, s.logits_chain, s.token_chain});
  Json j = {{"protocol", kResultProtocol},    {"plan_sha256", r.plan_sha256},
            {"model_sha256", r.model_sha256}, {"isa", r.isa},
            {"threads", r.threads},           {"generate_ms", r.generate_ms},
            {"wrap_events", r.wrap_events},   {"fingerprint", r.fingerprint},
            {"steps", std::move(steps)}};
  if (!r.step0_logits.empty()) j["step0_logits"] = HexLower(r.step0_logits);
  return j;
}

PlanResult ParseResult(std::string_view text, const RunPlan& plan, const std::string& plan_sha256) {
  const Json doc = Json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw ResultError("the result is not a JSON object");
  try {
    if (doc.at("protocol").get<int64_t>() != kResultProtocol) {
      throw ResultError("result protocol " + doc.at("protocol").dump() + ", expected " +
                        std::to_string(kResultProtocol));
    }
    PlanResult r;
    r.plan_sha256 = doc.at("plan_sha256").get<std::string>();
    if (r.plan_sha256 != plan_sha256) {
      throw ResultError("the result answers another plan (sha256 " + r.plan_sha256.substr(0, 16) +
                        ", sent " + plan_sha256.substr(0, 16) + ")");
    }
    r.model_sha256 = doc.at("model_sha256").get<std::string>();
    if (r.model_sha256 != plan.model.sha256) {
      throw ResultError("the child ran another model (sha256 " + r.model_sha256.substr(0, 16) +
                        ", the plan names " + plan.model.sha256.substr(0, 16) + ")");
    }
    r.isa = doc.at("isa").get<std::string>();
    r.threads = doc.at("threads").get<int64_t>();
    r.generate_ms = doc.at("generate_ms").get<int64_t>();
    r.wrap_events = doc.at("wrap_events").get<int64_t>();
    if (r.generate_ms < 0 || r.wrap_events < 0 || r.threads < 1) {
      throw ResultError("negative timing, wrap count or thread count");
    }
    r.fingerprint = doc.at("fingerprint");
    if (!r.fingerprint.is_object()) throw ResultError("no fingerprint");
    const Json& steps = doc.at("steps");
    if (!steps.is_array() || static_cast<int64_t>(steps.size()) != plan.max_new) {
      throw ResultError("the result has " + std::to_string(steps.is_array() ? steps.size() : 0) +
                        " steps, the plan asks for " + std::to_string(plan.max_new));
    }
    for (const Json& s : steps) {
      StepHashes h{s.at(0).get<int32_t>(), s.at(1).get<std::string>(), s.at(2).get<std::string>()};
      if (!IsSha256Hex(h.logits_chain) || !IsSha256Hex(h.token_chain)) {
        throw ResultError("a step's chains are not 64 lowercase hex digits");
      }
      r.steps.push_back(std::move(h));
    }
    const bool float_plan = plan.engine == EngineKind::kFloat;
    if (doc.contains("step0_logits") != float_plan) {
      throw ResultError(float_plan ? "a float result without its step-0 logits"
                                   : "an int8 result with float step-0 logits");
    }
    if (float_plan) {
      const auto bytes = FromHex(doc.at("step0_logits").get<std::string>());
      if (!bytes || bytes->empty() || bytes->size() % 4 != 0) {
        throw ResultError("the step-0 logits are not hex of float32 values");
      }
      HashChain chain;
      chain.Update(*bytes);
      if (r.steps.empty() || chain.Hex() != r.steps.front().logits_chain) {
        throw ResultError("the step-0 logits do not hash to the step-0 logits chain");
      }
      r.step0_logits = std::move(*bytes);
    }
    return r;
  } catch (const Json::exception& e) {
    throw ResultError(std::string("malformed result: ") + e.what());
  }
}

}  // namespace dv::plan
