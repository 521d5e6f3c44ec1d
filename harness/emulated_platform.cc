#include "harness/emulated_platform.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

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

}  // namespace

std::string CrossBinaryVariable(const std::string& platform) {
  return "DETVERIFY_CROSS_BIN_" + Upper(platform);
}

std::string EmulationSkipReason(const std::string& platform) {
  const std::string qemu = "qemu-" + platform;
  if (FindOnPath(qemu).empty()) return qemu + " is not installed (Debian package qemu-user)";
  const std::string variable = CrossBinaryVariable(platform);
  const std::string binary = CrossBinary(platform);
  if (binary.empty()) {
    return "no " + platform + " build of detverify-engine: set " + variable +
           " (scripts/cross_test.sh " + platform + " builds one)";
  }
  if (!IsExecutableFile(binary)) return variable + "=" + binary + " is not an executable file";
  return "";
}

std::vector<std::string> EmulatorCommand(const std::string& platform) {
  return {FindOnPath("qemu-" + platform), CrossBinary(platform)};
}

}  // namespace dv::harness
