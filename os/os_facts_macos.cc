// macOS: sysctl (machdep.cpu.brand_string, hw.*, kern.*, sysctl.proc_translated,
// hw.optional.arm.*), uname, getrusage, _NSGetExecutablePath. Compiled on Linux too, against
// declarations of those calls (tests/os/macos_shim), where a test drives it with a fake sysctl.
#include <mach-o/dyld.h>
#include <sys/resource.h>
#include <sys/sysctl.h>
#include <sys/types.h>
#include <sys/utsname.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "os/os_facts.h"
#include "os/os_text.h"

namespace dv::os {
namespace {

using internal::Printable;
using internal::Trim;

// A string sysctl, "" when absent.
std::string SysctlString(const char* name) {
  size_t size = 0;
  if (sysctlbyname(name, nullptr, &size, nullptr, 0) != 0 || size == 0) return {};
  std::string value(size, '\0');
  if (sysctlbyname(name, value.data(), &size, nullptr, 0) != 0) return {};
  value.resize(size);
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

// An integer sysctl (int32 or int64 as the kernel stores it), `fallback` when absent.
int64_t SysctlInt(const char* name, int64_t fallback) {
  int64_t value64 = 0;
  size_t size = sizeof(value64);
  if (sysctlbyname(name, &value64, &size, nullptr, 0) != 0) return fallback;
  if (size == sizeof(int32_t)) {
    int32_t value32 = 0;
    size = sizeof(value32);
    if (sysctlbyname(name, &value32, &size, nullptr, 0) != 0) return fallback;
    return value32;
  }
  return size == sizeof(int64_t) ? value64 : fallback;
}

utsname Uname() {
  utsname uts{};
  if (::uname(&uts) != 0) uts = utsname{};
  return uts;
}

}  // namespace

CpuFacts ReadCpuFacts() {
  CpuFacts facts;
  // "Apple M2 Pro" on Apple silicon, "Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz" on Intel Macs.
  facts.model = Printable(Trim(SysctlString("machdep.cpu.brand_string")));
  if (facts.model.empty()) facts.model = MachineName();
  const std::string machine = MachineName();  // "arm64" or "x86_64" (the hardware's)
  facts.described_arch = machine == "arm64" ? "aarch64" : machine == "x86_64" ? "x86_64" : "";
  // An x86_64 binary under Rosetta 2 on Apple silicon: uname reports x86_64, this does not.
  facts.translated = SysctlInt("sysctl.proc_translated", 0) == 1;
  return facts;
}

Aarch64Features ReadAarch64Features() {
  Aarch64Features f;
#if defined(__aarch64__) || defined(DV_OS_MACOS_SHIM)
  // Every Apple silicon CPU has Advanced SIMD; the rest are reported feature by feature.
  f.asimd = SysctlInt("hw.optional.AdvSIMD", 1) != 0;
  f.asimddp = SysctlInt("hw.optional.arm.FEAT_DotProd", 0) != 0;
  f.i8mm = SysctlInt("hw.optional.arm.FEAT_I8MM", 0) != 0;
  f.sve = false;  // no Apple CPU implements SVE
#endif
  return f;
}

// No Mac has AMX tiles (Apple's matrix unit is another thing, reached only through Accelerate).
bool RequestAmxTileData() { return false; }

int64_t OnlineCpuCount() { return SysctlInt("hw.logicalcpu", 0); }

// macOS has no affinity masks a process is confined to; the active CPUs are all usable.
int UsableCpuCount() {
  const int64_t n = SysctlInt("hw.activecpu", SysctlInt("hw.logicalcpu", 1));
  return n > 0 && n < INT32_MAX ? static_cast<int>(n) : 1;
}

int64_t PhysicalMemoryBytes() { return SysctlInt("hw.memsize", 0); }

// Apple silicon describes its performance cores' cluster (perflevel0), whose L2 a cluster
// shares; Intel Macs give one per-core hw.l2cachesize.
int64_t L2CacheBytesPerCpu() {
  const int64_t cluster = SysctlInt("hw.perflevel0.l2cachesize", 0);
  if (cluster > 0) {
    const int64_t sharing = SysctlInt("hw.perflevel0.cpusperl2", 1);
    return cluster / (sharing > 0 ? sharing : 1);
  }
  const int64_t size = SysctlInt("hw.l2cachesize", 0);
  return size > 0 ? size : 0;
}

std::string OsName() {
  const std::string version = SysctlString("kern.osproductversion");  // "14.2.1"
  if (!version.empty()) return Printable("macOS " + version);
  return Printable(Uname().sysname);
}

std::string KernelRelease() { return Printable(Uname().release); }
std::string MachineName() { return Printable(Uname().machine); }

std::string SelfExecutablePath() {
  uint32_t size = 0;
  _NSGetExecutablePath(nullptr, &size);  // asks for the size
  if (size == 0) return {};
  std::vector<char> path(size + 1, '\0');
  if (_NSGetExecutablePath(path.data(), &size) != 0) return {};
  char resolved[PATH_MAX];
  if (::realpath(path.data(), resolved) != nullptr) return resolved;
  return path.data();
}

// ru_maxrss is in bytes on macOS (KiB on Linux).
int64_t PeakRssBytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return -1;
  return static_cast<int64_t>(u.ru_maxrss);
}

bool ResetPeakRss() { return false; }  // no such knob

}  // namespace dv::os
