#include "engine/backends/cpu_features.h"

#include <cstdlib>
#include <iterator>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "engine/backends/backend_error.h"
#include "os/os_facts.h"

namespace dv {
namespace {

// Most portable first: BestCpuIsa() is the last supported one.
constexpr CpuIsa kAllIsas[] = {CpuIsa::kScalar, CpuIsa::kNeon,       CpuIsa::kNeonDot,
                               CpuIsa::kAvx2,   CpuIsa::kAvx512Vnni, CpuIsa::kAmx};

std::string NameList(const std::vector<CpuIsa>& isas) {
  std::string out;
  for (CpuIsa isa : isas) {
    if (!out.empty()) out += ", ";
    out += CpuIsaName(isa);
  }
  return out;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
bool AmxInCpuidAndXcr0() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  if ((edx & (1u << 24)) == 0 || (edx & (1u << 25)) == 0) return false;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || (ecx & (1u << 27)) == 0) return false;  // OSXSAVE
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const unsigned tile_state = (1u << 17) | (1u << 18);
  return (xcr0_lo & tile_state) == tile_state;
}
#endif

}  // namespace

std::string_view CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
      return "scalar";
    case CpuIsa::kNeon:
      return "neon";
    case CpuIsa::kNeonDot:
      return "neondot";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512Vnni:
      return "avx512vnni";
    case CpuIsa::kAmx:
      return "amx";
  }
  return "unknown";
}

CpuIsa ParseCpuIsa(std::string_view name) {
  for (CpuIsa isa : kAllIsas) {
    if (CpuIsaName(isa) == name) return isa;
  }
  throw BackendError("unknown cpu ISA level '" + std::string(name) +
                     "' (known: " + NameList(AllCpuIsas()) + ")");
}

bool CpuSupports(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
      return true;
#if defined(__aarch64__)
    case CpuIsa::kNeon:
      return true;  // Advanced SIMD is part of the AArch64 base ABI
    case CpuIsa::kNeonDot:
      // FEAT_DotProd (SDOT/UDOT) as the OS grants it: Linux HWCAP_ASIMDDP (the kernel sets it
      // from ID_AA64ISAR0_EL1.DP), macOS hw.optional.arm.FEAT_DotProd (os/os_facts.h).
      return os::ReadAarch64Features().asimddp;
#else
    case CpuIsa::kNeon:
    case CpuIsa::kNeonDot:
      return false;
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    // __builtin_cpu_supports reads CPUID and, for AVX and AVX-512, the XCR0 bits that say the OS
    // saves the wide registers.
    case CpuIsa::kAvx2:
      return __builtin_cpu_supports("avx2");
    case CpuIsa::kAvx512Vnni:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    case CpuIsa::kAmx: {
      // CPUID.(7,0):EDX bits 24 (AMX-TILE) and 25 (AMX-INT8), XCR0 bits 17 and 18 (the OS
      // manages the tile state), and the OS's grant of the tile data to this process.
      static const bool amx =
          CpuSupports(CpuIsa::kAvx512Vnni) && AmxInCpuidAndXcr0() && os::RequestAmxTileData();
      return amx;
    }
#else
    case CpuIsa::kAvx2:
    case CpuIsa::kAvx512Vnni:
    case CpuIsa::kAmx:
      return false;
#endif
  }
  return false;
}

std::vector<CpuIsa> AllCpuIsas() { return {std::begin(kAllIsas), std::end(kAllIsas)}; }

std::vector<CpuIsa> SupportedCpuIsas() {
  std::vector<CpuIsa> out;
  for (CpuIsa isa : kAllIsas) {
    if (CpuSupports(isa)) out.push_back(isa);
  }
  return out;
}

CpuIsa BestCpuIsa() { return SupportedCpuIsas().back(); }

void RequireCpuIsa(CpuIsa isa) {
  if (!CpuSupports(isa)) {
    throw BackendError("this CPU cannot run the cpu backend at ISA level '" +
                       std::string(CpuIsaName(isa)) +
                       "' (CPUID offers: " + NameList(SupportedCpuIsas()) + ")");
  }
}

CpuIsa CpuIsaFromEnvironment() {
  const char* env = std::getenv("DETVERIFY_CPU_ISA");
  if (env == nullptr || *env == '\0') return BestCpuIsa();
  CpuIsa isa = CpuIsa::kScalar;
  try {
    isa = ParseCpuIsa(env);
  } catch (const BackendError& e) {
    throw BackendError(std::string("DETVERIFY_CPU_ISA: ") + e.what());
  }
  try {
    RequireCpuIsa(isa);
  } catch (const BackendError& e) {
    throw BackendError(std::string("DETVERIFY_CPU_ISA: ") + e.what());
  }
  return isa;
}

}  // namespace dv
