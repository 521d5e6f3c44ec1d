// float_engine/blas.h's choice of OpenBLAS kernels: the rule on its own (a table of loaded cores
// and CPUs), the switch in this process (a load that picked Prescott's SSE3 kernels, made by
// choosing them, is replaced by the kernels this CPU's features call for, and products stay
// right throughout), the user's OPENBLAS_CORETYPE standing, and this process running kernels
// that use the CPU's AVX2 + FMA where it has them. The CPU's features come from
// /proc/cpuinfo's flags here, not from the compiler's CPUID reading the code uses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "float_engine/blas.h"

namespace dv {
namespace {

std::set<std::string> CpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

BlasCpu CpuFromFlags() {
  const std::set<std::string> f = CpuFlags();
  BlasCpu cpu;
  cpu.avx2_fma = f.count("avx2") && f.count("fma");
  cpu.avx512 = f.count("avx512f") && f.count("avx512vl") && f.count("avx512bw") &&
               f.count("avx512dq") && f.count("avx512cd");
  return cpu;
}

// y = x . w^T through the float engine's BLAS call against a long double product, within the
// dot-product bound k * eps * sum |x_i w_i| (any summation order meets it).
void ExpectProductsRight(const char* core) {
  SCOPED_TRACE(core);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t m : {1, 5}) {
    const int64_t k = 300, n = 70;
    std::vector<float> x(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k));
    for (float& v : x) v = u(rng);
    for (float& v : w) v = u(rng);
    std::vector<float> y(static_cast<size_t>(m * n), NAN);
    MatmulXWt(x.data(), k, m, k, w.data(), n, y.data(), n);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        long double exact = 0, mag = 0;
        for (int64_t t = 0; t < k; ++t) {
          const long double p = static_cast<long double>(x[static_cast<size_t>(i * k + t)]) *
                                w[static_cast<size_t>(j * k + t)];
          exact += p;
          mag += std::fabs(p);
        }
        const double bound = static_cast<double>(k) * 0x1p-24 * static_cast<double>(mag);
        ASSERT_NEAR(y[static_cast<size_t>(i * n + j)], static_cast<double>(exact), bound)
            << "m " << m << " row " << i << " column " << j;
      }
    }
  }
}

TEST(BlasCore, TheRuleReplacesOnlyPreAvx2CoresOnCpusWithAvx2) {
  const BlasCpu none{}, avx2{true, false}, avx512{true, true};
  EXPECT_EQ(BetterBlasCore("Prescott", false, avx512), "SkylakeX");
  EXPECT_EQ(BetterBlasCore("PRESCOTT", false, avx512), "SkylakeX");  // names without case
  EXPECT_EQ(BetterBlasCore("Prescott", false, avx2), "Haswell");
  EXPECT_EQ(BetterBlasCore("Nehalem", false, avx2), "Haswell");
  EXPECT_EQ(BetterBlasCore("Sandybridge", false, avx512), "SkylakeX");
  EXPECT_EQ(BetterBlasCore("Core2", false, avx2), "Haswell");
  EXPECT_EQ(BetterBlasCore("Unknown", false, avx2), "Haswell");
  // The user's OPENBLAS_CORETYPE stands; so does a CPU without AVX2 + FMA.
  EXPECT_EQ(BetterBlasCore("Prescott", true, avx512), "");
  EXPECT_EQ(BetterBlasCore("Prescott", false, none), "");
  // Cores whose kernels use AVX2 + FMA or more, and names 0.3.21 does not know, stand.
  for (const char* core : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "Excavator",
                           "SapphireRapids", "Prescott2", "Presc", ""}) {
    EXPECT_EQ(BetterBlasCore(core, false, avx512), "") << core;
  }
}

TEST(BlasCore, AMisdetectedLoadIsReplacedByTheCpusKernels) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "OpenBLAS's x86-64 core names only";
#else
  EnsureBlasCore();  // this process's own check first, so that it cannot undo what follows
  const std::string start = BlasCoreName();
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  const bool env_set = env != nullptr;
  if (!ChooseBlasCore("Prescott")) {
    GTEST_SKIP() << "this OpenBLAS (" << start
                 << " kernels) cannot choose its kernels again here (no DYNAMIC_ARCH, so no "
                    "gotoblas_dynamic_init, or not an x86-64 ELF build)";
  }
  EXPECT_EQ(BlasCoreName(), "Prescott");
  EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE") != nullptr, env_set) << "environment left as found";
  ExpectProductsRight("Prescott");

  const BlasCpu cpu = CpuFromFlags();
  if (!env_set) {
    const BlasCoreFix fix = FixBlasCore();
    EXPECT_EQ(fix.loaded, "Prescott");
    const std::string want = !cpu.avx2_fma ? "" : cpu.avx512 ? "SkylakeX" : "Haswell";
    EXPECT_EQ(fix.chosen, want);
    EXPECT_EQ(BlasCoreName(), want.empty() ? "Prescott" : want);
    ExpectProductsRight("the replacement");
  }
  // The user's choice stands.
  ASSERT_TRUE(ChooseBlasCore("Prescott"));
  setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  const BlasCoreFix forced = FixBlasCore();
  if (env_set) {
    setenv("OPENBLAS_CORETYPE", env, 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
  EXPECT_EQ(forced.chosen, "");
  EXPECT_EQ(BlasCoreName(), "Prescott");

  ASSERT_TRUE(ChooseBlasCore(start));
  EXPECT_EQ(BlasCoreName(), start);
#endif
}

TEST(BlasCore, ThisProcessRunsKernelsForThisCpu) {
  EnsureBlasCore();
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  if (env != nullptr && *env != '\0') {
    GTEST_SKIP() << "OPENBLAS_CORETYPE=" << env << " chooses the kernels";
  }
  const BlasCpu cpu = CpuFromFlags();
  if (!cpu.avx2_fma) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  EXPECT_EQ(BetterBlasCore(BlasCoreName(), false, cpu), "")
      << "OpenBLAS runs " << BlasCoreName() << " kernels on a CPU with AVX2 + FMA";
  const std::string d = BlasDescription();
  EXPECT_NE(d.find("(" + BlasCoreName() + " kernels"), std::string::npos) << d;
}

}  // namespace
}  // namespace dv
