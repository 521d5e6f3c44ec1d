// A fake macOS for tests/os/os_macos_test.cc: the values sysctlbyname and _NSGetExecutablePath
// answer with (macos_shim/ declares them as macOS does).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>

namespace dv::os::fake_macos {

// name -> a string, a 32-bit or a 64-bit integer (the widths macOS's sysctls have).
using SysctlValue = std::variant<std::string, int32_t, int64_t>;
std::map<std::string, SysctlValue>& Sysctls();
std::string& ExecutablePath();

}  // namespace dv::os::fake_macos
