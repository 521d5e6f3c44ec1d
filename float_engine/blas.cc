#include "float_engine/blas.h"

#include <cblas.h>
#include <strings.h>

#include <array>
#include <cstdlib>
#include <string_view>

#include "float_engine/small_gemm.h"

// Exported by every DYNAMIC_ARCH OpenBLAS (driver/others/dynamic.c), declared in none of its
// public headers: drop the kernel table chosen at load and choose again (from
// OPENBLAS_CORETYPE, else by CPU model). Weak, so that a build without DYNAMIC_ARCH links too
// (then they are null and the choice stays); referenced only on x86-64 ELF hosts, where weak
// undefined symbols resolve to null and the fault this works around exists.
#if defined(__x86_64__) && defined(__ELF__)
#define DV_BLAS_CAN_CHOOSE_CORE 1
extern "C" {
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}
#endif

namespace dv {
namespace {

blasint B(int64_t v) { return static_cast<blasint>(v); }

BlasCpu ThisCpu() {
  BlasCpu cpu;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports reads CPUID and the XCR0 bits that say the OS saves the registers.
  cpu.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  cpu.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512cd");
#endif
  return cpu;
}

const BlasCoreFix& FixBlasCoreOnce() {
  static const BlasCoreFix fix = FixBlasCore();
  return fix;
}

}  // namespace

std::string BetterBlasCore(std::string_view loaded, bool user_forced, const BlasCpu& cpu) {
  if (user_forced || !cpu.avx2_fma) return "";
  // 0.3.21's core names (dynamic.c) whose kernels predate AVX2 + FMA.
  static constexpr std::array<std::string_view, 21> kOld = {
      "Unknown",   "Katmai", "Coppermine",  "Northwood", "Prescott",  "Banias",     "Atom",
      "Core2",     "Penryn", "Dunnington",  "Nehalem",   "Athlon",    "Opteron",    "Opteron_SSE3",
      "Barcelona", "Nano",   "Sandybridge", "Bobcat",    "Bulldozer", "Piledriver", "Steamroller"};
  bool old = false;
  for (std::string_view name : kOld) {
    old = old || (name.size() == loaded.size() &&
                  strncasecmp(name.data(), loaded.data(), name.size()) == 0);
  }
  if (!old) return "";
  // As OpenBLAS itself chooses for an x86-64 CPU it does not know (gotoblas_dynamic_init's
  // fallback), less Cooperlake, which differs only by the bf16 GEMM Debian's build leaves out
  // and which 0.3.21's OPENBLAS_CORETYPE cannot name.
  return cpu.avx512 ? "SkylakeX" : "Haswell";
}

bool ChooseBlasCore(const std::string& core) {
#if !defined(DV_BLAS_CAN_CHOOSE_CORE)
  (void)core;
  return false;
#else
  if (gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr) return false;
  // The one documented way to name a core is OPENBLAS_CORETYPE, read by gotoblas_dynamic_init;
  // it is set for that call only and the environment left as it was.
  const char* before = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = before != nullptr ? before : "";
  if (setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0) return false;
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  if (before != nullptr) {
    setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
  const std::string now = BlasCoreName();
  return now.size() == core.size() && strncasecmp(now.data(), core.data(), core.size()) == 0;
#endif
}

BlasCoreFix FixBlasCore() {
  BlasCoreFix f;
  f.loaded = BlasCoreName();
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const std::string better =
      BetterBlasCore(f.loaded, forced != nullptr && *forced != '\0', ThisCpu());
  if (!better.empty() && ChooseBlasCore(better)) f.chosen = BlasCoreName();
  return f;
}

void EnsureBlasCore() { (void)FixBlasCoreOnce(); }

std::string BlasCoreName() { return openblas_get_corename(); }

void MatmulXWt(const float* x, int64_t ldx, int64_t m, int64_t k, const float* w, int64_t n,
               float* y, int64_t ldy) {
  EnsureBlasCore();
  if (m == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, B(n), B(k), 1.0f, w, B(k), x, 1, 0.0f, y, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B(m), B(n), B(k), 1.0f, x, B(ldx), w, B(k),
                0.0f, y, B(ldy));
  }
}

void MatmulAB(const float* a, int64_t lda, int64_t m, int64_t k, const float* b, int64_t ldb,
              int64_t n, float* c, int64_t ldc) {
  EnsureBlasCore();
  if (m == 1) {
    // c[n] = b[k, n]^T . a[k]
    cblas_sgemv(CblasRowMajor, CblasTrans, B(k), B(n), 1.0f, b, B(ldb), a, 1, 0.0f, c, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B(m), B(n), B(k), 1.0f, a, B(lda), b,
                B(ldb), 0.0f, c, B(ldc));
  }
}

void SetBlasThreads(int threads) {
  EnsureBlasCore();
  if (threads >= 1) openblas_set_num_threads(threads);
}

int BlasThreads() {
  EnsureBlasCore();
  return openblas_get_num_threads();
}

std::string BlasDescription(FloatDType dtype) {
  const BlasCoreFix& fix = FixBlasCoreOnce();
  std::string s = openblas_get_config();
  while (!s.empty() && s.back() == ' ') s.pop_back();
  s += std::string(" (") + openblas_get_corename() + " kernels";
  if (!fix.chosen.empty()) s += ", chosen by CPU features: its load picked " + fix.loaded;
  s += "); ";
  const std::string rows = std::to_string(kSmallGemmMaxRows) + " rows: ";
  const SmallGemmIsa small = SmallGemmIsaForThisMachine();
  if (small == SmallGemmIsa::kNone) return s + "2-" + rows + "sgemm";
  const std::string kernel = std::string("small-batch GEMM ") + SmallGemmIsaName(small);
  if (dtype == FloatDType::kBf16) {
    return s + "1-" + std::to_string(kSmallGemmBf16MaxRows) + " rows: " + kernel + ", bf16 weights";
  }
  return s + "2-" + rows + kernel;
}

}  // namespace dv
