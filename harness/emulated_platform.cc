#include "harness/emulated_platform.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "engine/co_prompts.h"

namespace dv::harness {
namespace {

std::string Upper(std::string text) {
  for (char& c : text) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return text;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The first PATH entry holding an executable `name`, or "".
std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > begin ? dirs.substr(begin, end - begin) : ".";
    const std::string candidate = dir + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
    begin = end + 1;
  }
  return {};
}

std::string CrossBinary(const std::string& platform) {
  const char* value = std::getenv(CrossBinaryVariable(platform).c_str());
  return value != nullptr ? value : "";
}

std::string JoinIds(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

}  // namespace

std::string CrossBinaryVariable(const std::string& platform) {
  return "DETVERIFY_CROSS_BIN_" + Upper(platform);
}

std::string EmulationSkipReason(const Configuration& config) {
  const std::string qemu = "qemu-" + config.platform;
  if (FindOnPath(qemu).empty()) return qemu + " is not installed (Debian package qemu-user)";
  const std::string variable = CrossBinaryVariable(config.platform);
  const std::string binary = CrossBinary(config.platform);
  if (binary.empty()) {
    return "no " + config.platform + " build of detverify-engine: set " + variable +
           " (scripts/cross_test.sh " + config.platform + " builds one)";
  }
  if (!IsExecutableFile(binary)) return variable + "=" + binary + " is not an executable file";
  return "";
}

std::vector<std::string> EmulatedCommand(const Scenario& scenario, const Configuration& config,
                                         const ResolvedModel& model,
                                         const std::vector<int32_t>& prompt) {
  std::vector<std::string> argv = {FindOnPath("qemu-" + config.platform),
                                   CrossBinary(config.platform), "generate"};
  if (model.synthetic) {
    argv.insert(argv.end(), {"--preset", scenario.model.fallback_preset, "--seed",
                             std::to_string(scenario.model.fallback_seed)});
  } else {
    argv.insert(argv.end(),
                {"--artifact", std::filesystem::absolute(model.artifact_path).string()});
  }
  argv.insert(argv.end(), {"--prompt-ids", JoinIds(prompt)});
  if (config.batch.size > 1) {
    // The same co-prompts as the native rows (config_runner.cc), drawn here and passed as ids.
    CoPromptSpec spec = scenario.co_prompts;
    spec.count = config.batch.size - 1;
    std::string rows;
    for (const auto& row : MakeCoPrompts(spec, model.artifact->weights().config.vocab)) {
      rows += (rows.empty() ? "" : ";") + JoinIds(row);
    }
    argv.insert(argv.end(), {"--co-prompt-ids", rows});
  }
  argv.insert(argv.end(),
              {"--position", std::to_string(config.batch.position), "--split",
               std::to_string(config.split_prefill), "--max-new", std::to_string(scenario.max_new),
               "--backend", config.backend, "--threads", std::to_string(config.threads), "--json",
               "--full-chains", "--fingerprint"});
  return argv;
}

EmulatedOutcome ParseEmulatedOutput(const std::string& text, const Configuration& config,
                                    const std::string& artifact_sha256) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    throw std::runtime_error("the output is not a JSON document");
  }
  try {
    const std::string sha = doc.at("artifact").at("sha256").get<std::string>();
    if (sha != artifact_sha256) {
      throw std::runtime_error("the " + config.platform +
                               " binary loaded another artifact (sha256 " + sha.substr(0, 16) +
                               ", expected " + artifact_sha256.substr(0, 16) + ")");
    }
    const nlohmann::json& row = doc.at("rows").at(static_cast<size_t>(config.batch.position));
    if (!row.at("ours").get<bool>()) {
      throw std::runtime_error("row " + std::to_string(config.batch.position) + " is not ours");
    }
    const auto tokens = row.at("tokens").get<std::vector<int32_t>>();
    const auto logits = row.at("logits_chain").get<std::vector<std::string>>();
    const auto chain = row.at("token_chain").get<std::vector<std::string>>();
    if (logits.size() != tokens.size() || chain.size() != tokens.size()) {
      throw std::runtime_error("per-step lists of different lengths");
    }
    EmulatedOutcome out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (logits[i].size() != 64 || chain[i].size() != 64) {
        throw std::runtime_error("chains are not in full");
      }
      out.outcome.steps.push_back({tokens[i], logits[i], chain[i]});
    }
    out.outcome.generate_ms = doc.at("wall_ms").get<int64_t>();
    out.outcome.wrap_events = doc.at("wrap_events").get<int64_t>();
    out.fingerprint = doc.at("fingerprint");
    if (!out.fingerprint.is_object()) throw std::runtime_error("no fingerprint");
    return out;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("malformed output: ") + e.what());
  }
}

}  // namespace dv::harness
