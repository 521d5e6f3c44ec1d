#include "verdict/expected_hashes.h"

#include <nlohmann/json.hpp>

namespace dv::verdict {

std::vector<ExpectedHashes> PublishedHashes(const std::string& canonical_scenario_text) {
  std::vector<ExpectedHashes> out;
  const nlohmann::json j = nlohmann::json::parse(canonical_scenario_text, nullptr, false);
  if (!j.is_object() || !j.contains("expect") || !j["expect"].is_array()) return out;
  for (const nlohmann::json& e : j["expect"]) {
    if (!e.is_object()) continue;
    ExpectedHashes h;
    auto text = [&](const char* key) {
      return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
    };
    h.artifact = text("artifact");
    h.steps = e.contains("steps") && e["steps"].is_number_integer() ? e["steps"].get<int64_t>() : 0;
    h.logits = text("logits");
    h.tokens = text("tokens");
    if (!h.artifact.empty() && h.steps > 0) out.push_back(h);
  }
  return out;
}

}  // namespace dv::verdict
