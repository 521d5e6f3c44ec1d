// ISA detection and the DETVERIFY_CPU_ISA override: names round-trip, unknown names and levels
// this CPU lacks are refused with a message that says what it has.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include "engine/backends/cpu_backend.h"
#include "engine/backends/cpu_features.h"

namespace dv {
namespace {

// Sets DETVERIFY_CPU_ISA for one scope and restores the previous value.
class ScopedIsaEnv {
 public:
  explicit ScopedIsaEnv(const char* value) {
    if (const char* old = std::getenv("DETVERIFY_CPU_ISA")) {
      had_ = true;
      old_ = old;
    }
    if (value) {
      setenv("DETVERIFY_CPU_ISA", value, 1);
    } else {
      unsetenv("DETVERIFY_CPU_ISA");
    }
  }
  ~ScopedIsaEnv() {
    if (had_) {
      setenv("DETVERIFY_CPU_ISA", old_.c_str(), 1);
    } else {
      unsetenv("DETVERIFY_CPU_ISA");
    }
  }

 private:
  bool had_ = false;
  std::string old_;
};

TEST(CpuFeatures, NamesRoundTrip) {
  for (CpuIsa isa : AllCpuIsas()) EXPECT_EQ(ParseCpuIsa(CpuIsaName(isa)), isa);
  EXPECT_EQ(ParseCpuIsa("neondot"), CpuIsa::kNeonDot);
  EXPECT_THROW(ParseCpuIsa("sse9"), BackendError);
}

TEST(CpuFeatures, ScalarIsAlwaysSupportedAndBestIsSupported) {
  EXPECT_TRUE(CpuSupports(CpuIsa::kScalar));
  EXPECT_TRUE(CpuSupports(BestCpuIsa()));
  EXPECT_EQ(SupportedCpuIsas().front(), CpuIsa::kScalar);
}

// neondot exactly where the CPU has FEAT_DotProd; without it the default falls back to neon.
TEST(CpuFeatures, DotProductLevelFollowsHwcap) {
#if defined(__aarch64__) && defined(__linux__)
  const bool dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  EXPECT_EQ(CpuSupports(CpuIsa::kNeonDot), dotprod);
  EXPECT_EQ(BestCpuIsa(), dotprod ? CpuIsa::kNeonDot : CpuIsa::kNeon);
#else
  EXPECT_FALSE(CpuSupports(CpuIsa::kNeonDot));
#endif
  const auto supported = SupportedCpuIsas();
  EXPECT_EQ(std::find(supported.begin(), supported.end(), CpuIsa::kNeonDot) != supported.end(),
            CpuSupports(CpuIsa::kNeonDot));
}

TEST(CpuFeatures, EnvironmentSelectsALevel) {
  {
    ScopedIsaEnv env(nullptr);
    EXPECT_EQ(CpuIsaFromEnvironment(), BestCpuIsa());
  }
  {
    ScopedIsaEnv env("");
    EXPECT_EQ(CpuIsaFromEnvironment(), BestCpuIsa());
  }
  for (CpuIsa isa : SupportedCpuIsas()) {
    ScopedIsaEnv env(std::string(CpuIsaName(isa)).c_str());
    EXPECT_EQ(CpuIsaFromEnvironment(), isa);
    EXPECT_EQ(MakeCpuBackend({1, std::nullopt, false})->isa(), isa);
  }
}

TEST(CpuFeatures, EnvironmentRefusesUnknownNames) {
  ScopedIsaEnv env("avx1024");
  try {
    CpuIsaFromEnvironment();
    FAIL() << "no exception";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("DETVERIFY_CPU_ISA"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("avx1024"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MakeCpuBackend({1, std::nullopt, false}), BackendError);
}

TEST(CpuFeatures, LevelsThisCpuLacksAreRefused) {
  bool any_missing = false;
  for (CpuIsa isa : AllCpuIsas()) {
    if (CpuSupports(isa)) continue;
    any_missing = true;
    ScopedIsaEnv env(std::string(CpuIsaName(isa)).c_str());
    try {
      CpuIsaFromEnvironment();
      FAIL() << "no exception for " << CpuIsaName(isa);
    } catch (const BackendError& e) {
      EXPECT_NE(std::string(e.what()).find("CPUID offers"), std::string::npos) << e.what();
    }
    EXPECT_THROW(MakeCpuBackend({1, isa, false}), BackendError);
  }
  if (!any_missing) GTEST_SKIP() << "this CPU supports every level";
}

}  // namespace
}  // namespace dv
