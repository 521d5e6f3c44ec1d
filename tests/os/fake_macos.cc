#include "tests/os/fake_macos.h"

#include <cerrno>
#include <cstring>

#include "tests/os/macos_shim/mach-o/dyld.h"
#include "tests/os/macos_shim/sys/sysctl.h"

namespace dv::os::fake_macos {

std::map<std::string, SysctlValue>& Sysctls() {
  static std::map<std::string, SysctlValue> table;
  return table;
}

std::string& ExecutablePath() {
  static std::string path;
  return path;
}

}  // namespace dv::os::fake_macos

// As macOS does: with oldp null, the size is reported; a buffer too small is ENOMEM; a string
// value includes its terminating NUL.
extern "C" int sysctlbyname(const char* name, void* oldp, size_t* oldlenp, void*, size_t) {
  using dv::os::fake_macos::Sysctls;
  const auto it = Sysctls().find(name);
  if (it == Sysctls().end()) {
    errno = ENOENT;
    return -1;
  }
  std::string bytes;
  if (const auto* s = std::get_if<std::string>(&it->second)) {
    bytes = *s + '\0';
  } else if (const auto* i32 = std::get_if<int32_t>(&it->second)) {
    bytes.assign(reinterpret_cast<const char*>(i32), sizeof(*i32));
  } else {
    const auto& i64 = std::get<int64_t>(it->second);
    bytes.assign(reinterpret_cast<const char*>(&i64), sizeof(i64));
  }
  if (oldp == nullptr) {
    *oldlenp = bytes.size();
    return 0;
  }
  if (*oldlenp < bytes.size()) {
    errno = ENOMEM;
    return -1;
  }
  std::memcpy(oldp, bytes.data(), bytes.size());
  *oldlenp = bytes.size();
  return 0;
}

extern "C" int _NSGetExecutablePath(char* buf, uint32_t* bufsize) {
  const std::string& path = dv::os::fake_macos::ExecutablePath();
  const auto need = static_cast<uint32_t>(path.size() + 1);
  if (buf == nullptr || *bufsize < need) {
    *bufsize = need;
    return -1;
  }
  std::memcpy(buf, path.c_str(), need);
  return 0;
}
