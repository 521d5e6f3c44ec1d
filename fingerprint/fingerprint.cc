#include "fingerprint/fingerprint.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <openssl/crypto.h>
#ifndef DV_FINGERPRINT_WITHOUT_SQLITE
#include <sqlite3.h>
#endif

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include "build_info.h"
#include "base/canonical_json.h"
#include "base/file_io.h"
#include "base/sha256.h"

#ifndef DV_YAML_CPP_VERSION
#define DV_YAML_CPP_VERSION "unknown"
#endif

namespace dv::fingerprint {
namespace {

constexpr const char* kUnknown = "unknown";
// Report-table labels are cut at this many characters (before the "(cpu)" suffix).
constexpr size_t kMaxLabelChars = 28;

// Whole small text file, or "" when it cannot be read (/proc files report size 0; the read
// goes to their end, bounded).
std::string ReadSmallFile(const char* path) {
  std::string text, error;
  if (!ReadFileBounded(path, 16 * kMiB, text, error)) return {};
  return text;
}

std::string Trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

// Strings from /proc and /etc are hashed; keep them printable ASCII so that a stray byte can
// neither break canonical JSON's UTF-8 check nor hide in a report.
std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out.push_back(byte >= 0x20 && byte < 0x7F ? c : '?');
  }
  return out;
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

// The architecture this binary was compiled for; the fingerprint describes the code that ran.
std::string CompiledArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__powerpc64__)
  return "ppc64";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return dv::build::kSystemProcessor;
#endif
}

// The architecture /proc/cpuinfo describes, judged by markers only one family prints; "" when
// unrecognised.
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

std::string CpuModel(const std::string& cpuinfo, const utsname& uts) {
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
  if (model.empty()) model = uts.machine;
  return Printable(model);
}

#if defined(__x86_64__) || defined(__i386__)
uint64_t XGetBv0() {
  uint32_t lo = 0;
  uint32_t hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

// From CPUID, and the AVX/AVX-512 features only when the OS saves their register state (XCR0):
// a CPU flag alone does not make the instructions usable.
nlohmann::json X86Features() {
  bool sse4_2 = false, fma = false, avx2 = false, avx512f = false, avx512bw = false,
       avx512vl = false, avx512_vnni = false, avx_vnni = false;
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  const unsigned int max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf >= 1) {
    __cpuid(1, eax, ebx, ecx, edx);
    sse4_2 = (ecx & (1u << 20)) != 0;
    const bool cpu_fma = (ecx & (1u << 12)) != 0;
    const bool osxsave = (ecx & (1u << 27)) != 0;
    const bool cpu_avx = (ecx & (1u << 28)) != 0;
    const uint64_t xcr0 = osxsave ? XGetBv0() : 0;
    const bool os_avx = cpu_avx && (xcr0 & 0x6) == 0x6;      // XMM, YMM
    const bool os_avx512 = os_avx && (xcr0 & 0xE0) == 0xE0;  // opmask, ZMM hi256, hi16 ZMM
    fma = os_avx && cpu_fma;
    if (max_leaf >= 7) {
      __cpuid_count(7, 0, eax, ebx, ecx, edx);
      const unsigned int max_subleaf = eax;
      avx2 = os_avx && (ebx & (1u << 5)) != 0;
      avx512f = os_avx512 && (ebx & (1u << 16)) != 0;
      avx512bw = os_avx512 && (ebx & (1u << 30)) != 0;
      avx512vl = os_avx512 && (ebx & (1u << 31)) != 0;
      avx512_vnni = os_avx512 && (ecx & (1u << 11)) != 0;
      if (max_subleaf >= 1) {
        __cpuid_count(7, 1, eax, ebx, ecx, edx);
        avx_vnni = os_avx && (eax & (1u << 4)) != 0;
      }
    }
  }
  return {{"sse4_2", sse4_2},           {"avx2", avx2},         {"fma", fma},
          {"avx512f", avx512f},         {"avx512bw", avx512bw}, {"avx512vl", avx512vl},
          {"avx512_vnni", avx512_vnni}, {"avx_vnni", avx_vnni}};
}
#endif

#if defined(__aarch64__)
// From the auxiliary vector (what the kernel, or qemu-user, grants this process), with the
// cpuinfo "Features" line as a fallback when the auxv is empty. Bit numbers are the Linux arm64
// ABI's (arch/arm64/include/uapi/asm/hwcap.h).
nlohmann::json Aarch64Features(const std::string& cpuinfo) {
  constexpr unsigned long kHwcapAsimd = 1ul << 1;
  constexpr unsigned long kHwcapAsimddp = 1ul << 20;
  constexpr unsigned long kHwcapSve = 1ul << 22;
  constexpr unsigned long kHwcap2I8mm = 1ul << 13;
  unsigned long hwcap = 0;
  unsigned long hwcap2 = 0;
#if defined(__linux__)
  hwcap = getauxval(AT_HWCAP);
  hwcap2 = getauxval(AT_HWCAP2);
#endif
  if (hwcap != 0) {
    return {{"asimd", (hwcap & kHwcapAsimd) != 0},
            {"asimddp", (hwcap & kHwcapAsimddp) != 0},
            {"i8mm", (hwcap2 & kHwcap2I8mm) != 0},
            {"sve", (hwcap & kHwcapSve) != 0}};
  }
  const std::string features = CpuinfoField(cpuinfo, "Features");
  return {{"asimd", HasWord(features, "asimd")},
          {"asimddp", HasWord(features, "asimddp")},
          {"i8mm", HasWord(features, "i8mm")},
          {"sve", HasWord(features, "sve")}};
}
#endif

nlohmann::json IsaFeatures([[maybe_unused]] const std::string& cpuinfo) {
#if defined(__x86_64__) || defined(__i386__)
  return X86Features();
#elif defined(__aarch64__)
  return Aarch64Features(cpuinfo);
#else
  return nlohmann::json::object();
#endif
}

bool IsEmulated(const std::string& cpuinfo) {
  const char* flag = std::getenv("DETVERIFY_EMULATED");
  if (flag != nullptr && std::string_view(flag) == "1") return true;
  const std::string described = CpuinfoArch(cpuinfo);
  return !described.empty() && described != CompiledArch();
}

// The engine-only binary (DETVERIFY_ENGINE_ONLY) links no SQLite.
const char* SqliteVersion() {
#ifdef DV_FINGERPRINT_WITHOUT_SQLITE
  return kUnknown;
#else
  return sqlite3_libversion();
#endif
}

int64_t MemoryBytes() {
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

std::string OsName(const utsname& uts) {
  for (const char* path : {"/etc/os-release", "/usr/lib/os-release"}) {
    std::string name = OsReleaseField(ReadSmallFile(path), "PRETTY_NAME");
    if (!name.empty()) return Printable(name);
  }
  return Printable(uts.sysname);
}

// Trade-mark signs, clock speed, core count and filler words removed, capped in length:
// "Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz" -> "Intel Xeon Platinum 8480+";
// "AMD EPYC 9654 96-Core Processor" -> "AMD EPYC 9654".
std::string ShortModelName(const std::string& model) {
  std::istringstream words(model);
  std::string word;
  std::string out;
  while (words >> word) {
    if (word == "@") break;  // the clock speed follows
    for (const char* mark : {"(R)", "(r)", "(TM)", "(tm)"}) {
      for (size_t at = word.find(mark); at != std::string::npos; at = word.find(mark)) {
        word.erase(at, std::string_view(mark).size());
      }
    }
    const bool core_count = word.size() > 5 && word.ends_with("-Core");
    if (word.empty() || word == "CPU" || word == "Processor" || core_count) continue;
    if (!out.empty()) out += ' ';
    out += word;
  }
  if (out.size() > kMaxLabelChars) out = Trim(out.substr(0, kMaxLabelChars));
  return out;
}

}  // namespace

nlohmann::json CollectFingerprint(nlohmann::json gpu) {
  utsname uts{};
  if (uname(&uts) != 0) uts = utsname{};
  const std::string cpuinfo = ReadSmallFile("/proc/cpuinfo");
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);

  const nlohmann::json libraries = {
      {"sqlite", SqliteVersion()},
      {"openssl", OpenSSL_version(OPENSSL_VERSION)},
      {"yaml_cpp", DV_YAML_CPP_VERSION},
      {"nlohmann_json", std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                            std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                            std::to_string(NLOHMANN_JSON_VERSION_PATCH)},
  };
  const std::string kernel = Printable(uts.release);
  nlohmann::json fingerprint = {
      {"fingerprint_version", kFingerprintVersion},
      {"cpu_model", CpuModel(cpuinfo, uts)},
      {"arch", CompiledArch()},
      {"byte_order", std::endian::native == std::endian::big ? "big" : "little"},
      {"emulated", IsEmulated(cpuinfo)},
      {"isa", IsaFeatures(cpuinfo)},
      {"logical_cores", cores > 0 ? int64_t{cores} : int64_t{0}},
      {"memory_bytes", MemoryBytes()},
      {"os", OsName(uts)},
      {"kernel", kernel.empty() ? kUnknown : kernel},
      {"compiler", dv::build::kCompiler},
      {"cxx_flags", dv::build::kCxxFlags},
      {"build_type", dv::build::kBuildType},
      {"libraries", libraries},
      {"tool_version", dv::build::kToolVersion},
      {"spec_version", dv::build::kSpecVersion},
      {"git_commit", dv::build::kGitCommit},
      {"gpu", std::move(gpu)},
  };
  return fingerprint;
}

std::string MachineId(const nlohmann::json& fingerprint) {
  return Sha256Hex(CanonicalJson(fingerprint));
}

std::string DeviceLabel(const nlohmann::json& fingerprint, std::string_view backend) {
  if (!fingerprint.is_object()) return "unknown device";
  if (backend == "cuda") {
    const auto gpu = fingerprint.find("gpu");
    if (gpu != fingerprint.end() && gpu->is_object()) {
      const auto name = gpu->find("name");
      if (name != gpu->end() && name->is_string() && !name->get<std::string>().empty()) {
        return ShortModelName(name->get<std::string>()) + " (cuda)";
      }
    }
  }
  std::string cpu;
  const auto model = fingerprint.find("cpu_model");
  if (model != fingerprint.end() && model->is_string())
    cpu = ShortModelName(model->get<std::string>());
  if (cpu.empty()) cpu = "unknown cpu";
  const auto emulated = fingerprint.find("emulated");
  if (emulated != fingerprint.end() && emulated->is_boolean() && emulated->get<bool>()) {
    const auto arch = fingerprint.find("arch");
    const std::string arch_name =
        arch != fingerprint.end() && arch->is_string() ? arch->get<std::string>() : "";
    return cpu + " (" + (arch_name.empty() ? "" : arch_name + " ") + "emulated)";
  }
  return cpu + " (cpu)";
}

}  // namespace dv::fingerprint
