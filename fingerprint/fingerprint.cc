#include "fingerprint/fingerprint.h"

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

#include "base/canonical_json.h"
#include "base/sha256.h"
#include "build_info.h"
#include "os/os_facts.h"

#ifndef DV_YAML_CPP_VERSION
#define DV_YAML_CPP_VERSION "unknown"
#endif

namespace dv::fingerprint {
namespace {

constexpr const char* kUnknown = "unknown";
// Report-table labels are cut at this many characters (before the "(cpu)" suffix).
constexpr size_t kMaxLabelChars = 28;

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
  // GCC declares it unsigned, clang int.
  const auto max_leaf = static_cast<unsigned int>(__get_cpuid_max(0, nullptr));
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
nlohmann::json Aarch64Features() {
  const os::Aarch64Features f = os::ReadAarch64Features();
  return {{"asimd", f.asimd}, {"asimddp", f.asimddp}, {"i8mm", f.i8mm}, {"sve", f.sve}};
}
#endif

nlohmann::json IsaFeatures() {
#if defined(__x86_64__) || defined(__i386__)
  return X86Features();
#elif defined(__aarch64__)
  return Aarch64Features();
#else
  return nlohmann::json::object();
#endif
}

bool IsEmulated(const os::CpuFacts& cpu) {
  const char* flag = std::getenv("DETVERIFY_EMULATED");
  if (flag != nullptr && std::string_view(flag) == "1") return true;
  if (cpu.translated) return true;
  return !cpu.described_arch.empty() && cpu.described_arch != CompiledArch();
}

// The engine-only binary (DETVERIFY_ENGINE_ONLY) links no SQLite.
const char* SqliteVersion() {
#ifdef DV_FINGERPRINT_WITHOUT_SQLITE
  return kUnknown;
#else
  return sqlite3_libversion();
#endif
}

std::string Trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
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
  const os::CpuFacts cpu = os::ReadCpuFacts();

  const nlohmann::json libraries = {
      {"sqlite", SqliteVersion()},
      {"openssl", OpenSSL_version(OPENSSL_VERSION)},
      {"yaml_cpp", DV_YAML_CPP_VERSION},
      {"nlohmann_json", std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                            std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                            std::to_string(NLOHMANN_JSON_VERSION_PATCH)},
  };
  const std::string kernel = os::KernelRelease();
  nlohmann::json fingerprint = {
      {"fingerprint_version", kFingerprintVersion},
      {"cpu_model", cpu.model},
      {"arch", CompiledArch()},
      {"byte_order", std::endian::native == std::endian::big ? "big" : "little"},
      {"emulated", IsEmulated(cpu)},
      {"isa", IsaFeatures()},
      {"logical_cores", os::OnlineCpuCount()},
      {"memory_bytes", os::PhysicalMemoryBytes()},
      {"os", os::OsName()},
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
  // What a cuda run chose (the GEMM kernels per shape, whether decode ran as graphs, which
  // forward pass ran) describes the run, not the machine.
  static constexpr const char* kRunFacts[] = {"gemm_algorithms", "cuda_graphs", "forward"};
  if (fingerprint.is_object()) {
    const auto gpu = fingerprint.find("gpu");
    if (gpu != fingerprint.end() && gpu->is_object()) {
      bool any = false;
      for (const char* key : kRunFacts) any = any || gpu->contains(key);
      if (any) {
        nlohmann::json copy = fingerprint;
        for (const char* key : kRunFacts) copy["gpu"].erase(key);
        return Sha256Hex(CanonicalJson(copy));
      }
    }
  }
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
