#include "reports/machine_facts.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace dv::reports {
namespace {

std::string Text(const nlohmann::json& fp, const char* key) {
  const auto it = fp.find(key);
  if (it == fp.end() || it->is_null()) return "unknown";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

std::string Memory(const nlohmann::json& fp) {
  const auto it = fp.find("memory_bytes");
  if (it == fp.end() || !it->is_number_integer()) return "unknown memory";
  // Reports are outside the integer core: a rounded GiB figure is for reading only.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB",
                static_cast<double>(it->get<int64_t>()) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> MachineFacts(const std::string& fingerprint_json) {
  const nlohmann::json fp = nlohmann::json::parse(fingerprint_json, nullptr, false);
  if (!fp.is_object()) return {{"fingerprint", fingerprint_json}};
  std::vector<std::pair<std::string, std::string>> facts;
  facts.emplace_back("cpu", Text(fp, "cpu_model"));
  std::string arch = Text(fp, "arch") + ", " + Text(fp, "byte_order") + "-endian";
  if (fp.value("emulated", false)) arch += ", emulated";
  facts.emplace_back("arch", arch);
  std::string isa;
  if (fp.contains("isa") && fp["isa"].is_object()) {
    for (const auto& item : fp["isa"].items()) {
      if (item.value().is_boolean() && item.value().get<bool>())
        isa += (isa.empty() ? "" : " ") + item.key();
    }
  }
  facts.emplace_back("isa", isa.empty() ? "baseline" : isa);
  facts.emplace_back("cores, memory", Text(fp, "logical_cores") + " logical cores, " + Memory(fp));
  facts.emplace_back("os, kernel", Text(fp, "os") + ", kernel " + Text(fp, "kernel"));
  facts.emplace_back("compiler", Text(fp, "compiler") + " " + Text(fp, "cxx_flags") + " (" +
                                     Text(fp, "build_type") + ")");
  std::string libs;
  if (fp.contains("libraries") && fp["libraries"].is_object()) {
    for (const auto& item : fp["libraries"].items()) {
      libs += (libs.empty() ? "" : ", ") + item.key() + " " +
              (item.value().is_string() ? item.value().get<std::string>() : item.value().dump());
    }
  }
  facts.emplace_back("libraries", libs.empty() ? "unknown" : libs);
  facts.emplace_back("detverify", Text(fp, "tool_version") + ", spec " + Text(fp, "spec_version") +
                                      ", commit " + Text(fp, "git_commit"));
  const auto gpu = fp.find("gpu");
  facts.emplace_back("gpu", gpu == fp.end() || gpu->is_null() ? "none" : gpu->dump());
  return facts;
}

std::string PrettyFingerprint(const std::string& fingerprint_json) {
  const nlohmann::json fp = nlohmann::json::parse(fingerprint_json, nullptr, false);
  if (fp.is_discarded()) return fingerprint_json;
  return fp.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace dv::reports
