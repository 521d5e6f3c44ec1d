// Linux: /proc/cpuinfo, /proc/meminfo, /proc/self/*, /etc/os-release, uname, getauxval,
// sched_getaffinity.
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include "base/file_io.h"
#include "os/os_facts.h"
#include "os/os_text.h"

namespace dv::os {
namespace {

using internal::Printable;
using internal::Trim;

// Whole small text file, or "" when it cannot be read (/proc files report size 0; the read
// goes to their end, bounded).
std::string ReadSmallFile(const char* path) {
  std::string text, error;
  if (!ReadFileBounded(path, 16 * kMiB, text, error)) return {};
  return text;
}

// The value of the first "key : value" line of /proc/cpuinfo-style text whose key is exactly
// `key`, or "".
std::string CpuinfoField(const std::string& cpuinfo, std::string_view key) {
  std::istringstream lines(cpuinfo);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (Trim(std::string_view(line).substr(0, colon)) == key) {
      return Trim(std::string_view(line).substr(colon + 1));
    }
  }
  return {};
}

[[maybe_unused]] bool HasWord(const std::string& words, std::string_view word) {
  std::istringstream in(words);
  std::string item;
  while (in >> item) {
    if (item == word) return true;
  }
  return false;
}

// The architecture /proc/cpuinfo describes, judged by markers only one family prints.
std::string CpuinfoArch(const std::string& cpuinfo) {
  const std::string vendor = CpuinfoField(cpuinfo, "vendor_id");
  if (vendor == "GenuineIntel" || vendor == "AuthenticAMD" || vendor == "HygonGenuine") {
    return "x86_64";
  }
  if (vendor.find("IBM/S390") != std::string::npos) return "s390x";
  if (!CpuinfoField(cpuinfo, "CPU implementer").empty()) return "aarch64";
  return {};
}

std::string ArmImplementerName(const std::string& code) {
  static const std::vector<std::pair<std::string, std::string>> kNames = {
      {"0x41", "ARM"},      {"0x42", "Broadcom"},  {"0x43", "Cavium"},
      {"0x46", "Fujitsu"},  {"0x48", "HiSilicon"}, {"0x4e", "NVIDIA"},
      {"0x51", "Qualcomm"}, {"0x61", "Apple"},     {"0xc0", "Ampere"}};
  for (const auto& [id, name] : kNames) {
    if (id == code) return name;
  }
  return "implementer " + code;
}

std::string ArmPartName(const std::string& implementer, const std::string& part) {
  if (implementer == "0x41") {
    static const std::vector<std::pair<std::string, std::string>> kParts = {
        {"0xd03", "Cortex-A53"},  {"0xd07", "Cortex-A57"},  {"0xd08", "Cortex-A72"},
        {"0xd0b", "Cortex-A76"},  {"0xd0c", "Neoverse-N1"}, {"0xd40", "Neoverse-V1"},
        {"0xd49", "Neoverse-N2"}, {"0xd4f", "Neoverse-V2"}};
    for (const auto& [id, name] : kParts) {
      if (id == part) return name;
    }
  }
  return "part " + part;
}

// /proc/cpuinfo "model name" (x86), "Hardware" or implementer/part (aarch64), vendor/machine
// (s390x); uname machine as a fallback.
std::string CpuModel(const std::string& cpuinfo) {
  std::string model = CpuinfoField(cpuinfo, "model name");
  if (model.empty()) model = CpuinfoField(cpuinfo, "Hardware");
  if (model.empty()) {
    const std::string implementer = CpuinfoField(cpuinfo, "CPU implementer");
    const std::string part = CpuinfoField(cpuinfo, "CPU part");
    if (!implementer.empty() && !part.empty()) {
      model = ArmImplementerName(implementer) + " " + ArmPartName(implementer, part);
    }
  }
  if (model.empty()) {
    const std::string vendor = CpuinfoField(cpuinfo, "vendor_id");
    if (vendor.find("IBM/S390") != std::string::npos) {
      // s390x prints "processor 0: version = ..., identification = ..., machine = 3906".
      const std::string processor = CpuinfoField(cpuinfo, "processor 0");
      const size_t at = processor.find("machine = ");
      model = "IBM/S390";
      if (at != std::string::npos) model += " machine " + Trim(processor.substr(at + 10));
    }
  }
  if (model.empty()) model = MachineName();
  return Printable(model);
}

// The value of `key` in os-release text (KEY=value, the value possibly quoted), or "".
std::string OsReleaseField(const std::string& os_release, std::string_view key) {
  std::istringstream lines(os_release);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t equals = line.find('=');
    if (equals == std::string::npos || std::string_view(line).substr(0, equals) != key) continue;
    std::string value = Trim(std::string_view(line).substr(equals + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    return value;
  }
  return {};
}

utsname Uname() {
  utsname uts{};
  if (::uname(&uts) != 0) uts = utsname{};
  return uts;
}

}  // namespace

CpuFacts ReadCpuFacts() {
  const std::string cpuinfo = ReadSmallFile("/proc/cpuinfo");
  CpuFacts facts;
  facts.model = CpuModel(cpuinfo);
  facts.described_arch = CpuinfoArch(cpuinfo);
  return facts;
}

Aarch64Features ReadAarch64Features() {
  Aarch64Features f;
#if defined(__aarch64__)
  // From the auxiliary vector (what the kernel, or qemu-user, grants this process), with the
  // cpuinfo "Features" line as a fallback when the auxv is empty. Bit numbers are the Linux arm64
  // ABI's (arch/arm64/include/uapi/asm/hwcap.h).
  constexpr unsigned long kHwcapAsimd = 1ul << 1;
  constexpr unsigned long kHwcapAsimddp = 1ul << 20;
  constexpr unsigned long kHwcapSve = 1ul << 22;
  constexpr unsigned long kHwcap2I8mm = 1ul << 13;
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  if (hwcap != 0) {
    f.asimd = (hwcap & kHwcapAsimd) != 0;
    f.asimddp = (hwcap & kHwcapAsimddp) != 0;
    f.i8mm = (hwcap2 & kHwcap2I8mm) != 0;
    f.sve = (hwcap & kHwcapSve) != 0;
    return f;
  }
  const std::string features = CpuinfoField(ReadSmallFile("/proc/cpuinfo"), "Features");
  f.asimd = HasWord(features, "asimd");
  f.asimddp = HasWord(features, "asimddp");
  f.i8mm = HasWord(features, "i8mm");
  f.sve = HasWord(features, "sve");
#endif
  return f;
}

bool RequestAmxTileData() {
#if defined(__x86_64__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023;  // linux/arch/x86/include/uapi/asm/prctl.h
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

int64_t OnlineCpuCount() {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? int64_t{cores} : int64_t{0};
}

int64_t L2CacheBytesPerCpu() {
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    const std::string level = Trim(ReadSmallFile((dir + "/level").c_str()));
    if (level.empty()) break;
    const std::string type = Trim(ReadSmallFile((dir + "/type").c_str()));
    if (level != "2" || (type != "Unified" && type != "Data")) continue;
    const int64_t size = internal::ParseCacheSize(ReadSmallFile((dir + "/size").c_str()));
    const int64_t sharing =
        internal::CountCpuList(ReadSmallFile((dir + "/shared_cpu_list").c_str()));
    if (size <= 0) return 0;
    return size / (sharing > 0 ? sharing : 1);
  }
  return 0;
}

int UsableCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

int64_t PhysicalMemoryBytes() {
  const std::string total = CpuinfoField(ReadSmallFile("/proc/meminfo"), "MemTotal");  // "N kB"
  if (!total.empty()) {
    char* end = nullptr;
    const unsigned long long kib = std::strtoull(total.c_str(), &end, 10);
    if (end != total.c_str() && kib > 0) return static_cast<int64_t>(kib) * 1024;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) return int64_t{pages} * int64_t{page_size};
  return 0;
}

std::string OsName() {
  for (const char* path : {"/etc/os-release", "/usr/lib/os-release"}) {
    std::string name = OsReleaseField(ReadSmallFile(path), "PRETTY_NAME");
    if (!name.empty()) return Printable(name);
  }
  return Printable(Uname().sysname);
}

std::string KernelRelease() { return Printable(Uname().release); }
std::string MachineName() { return Printable(Uname().machine); }

std::string SelfExecutablePath() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

int64_t PeakRssBytes() {
  // VmHWM of /proc/self/status; getrusage's ru_maxrss (KiB on Linux) where that file is missing.
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long long kib = -1;
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      if (std::sscanf(line, "VmHWM: %lld kB", &kib) == 1) break;
    }
    std::fclose(f);
    if (kib >= 0) return kib * 1024;
  }
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return -1;
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

bool ResetPeakRss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

}  // namespace dv::os
