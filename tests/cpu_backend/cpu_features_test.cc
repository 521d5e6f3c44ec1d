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
// Sets (or, for nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

class ScopedIsaEnv : public ScopedEnv {
 public:
  explicit ScopedIsaEnv(const char* value) : ScopedEnv("DETVERIFY_CPU_ISA", value) {}
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
    EXPECT_EQ(MakeCpuBackend({1, std::nullopt, false, std::nullopt, true})->isa(), isa);
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
  EXPECT_THROW(MakeCpuBackend({1, std::nullopt, false, std::nullopt, true}), BackendError);
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
    EXPECT_THROW(MakeCpuBackend({1, isa, false, std::nullopt, true}), BackendError);
  }
  if (!any_missing) GTEST_SKIP() << "this CPU supports every level";
}

// The GEMM's software prefetch distance: the kernel's own by default (none for the scalar and
// NEON kernels, which have no prefetch), DETVERIFY_PREFETCH or the option otherwise.
TEST(CpuPrefetch, DistanceFromKernelEnvironmentOrOption) {
  ScopedEnv unset("DETVERIFY_PREFETCH", nullptr);
  EXPECT_EQ(MakeCpuBackend({1, CpuIsa::kScalar, false, std::nullopt, true})->prefetch_bytes(), 0);
  EXPECT_EQ(MakeCpuBackend({1, CpuIsa::kScalar, false, 4096, true})->prefetch_bytes(), 0);
  // The kernels' own distances (docs/RESULTS.md, "The Intel Xeon host without AMX").
  for (const auto& [isa, own] :
       {std::pair{CpuIsa::kAvx2, 4096}, std::pair{CpuIsa::kAvx512Vnni, 4096},
        std::pair{CpuIsa::kAmx, 2048}}) {
    if (!CpuSupports(isa)) continue;
    EXPECT_EQ(MakeCpuBackend({1, isa, false, std::nullopt, true})->prefetch_bytes(), own);
    EXPECT_EQ(MakeCpuBackend({1, isa, false, 0, true})->prefetch_bytes(), 0);
    EXPECT_EQ(MakeCpuBackend({1, isa, false, 512, true})->prefetch_bytes(), 512);
    {
      ScopedEnv env("DETVERIFY_PREFETCH", "off");
      EXPECT_EQ(MakeCpuBackend({1, isa, false, std::nullopt, true})->prefetch_bytes(), 0);
      EXPECT_EQ(MakeCpuBackend({1, isa, false, 1024, true})->prefetch_bytes(),
                1024);  // option wins
    }
    {
      ScopedEnv env("DETVERIFY_PREFETCH", "4096");
      EXPECT_EQ(MakeCpuBackend({1, isa, false, std::nullopt, true})->prefetch_bytes(), 4096);
    }
    {
      ScopedEnv env("DETVERIFY_PREFETCH", "1000");
      try {
        MakeCpuBackend({1, isa, false, std::nullopt, true});
        FAIL() << "no exception";
      } catch (const BackendError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "DETVERIFY_PREFETCH='1000' 1000: a multiple of 64 bytes from 0 to 65536 was "
                  "expected");
      }
    }
  }
}

TEST(CpuRegions, EnvironmentSwitch) {
  for (const char* value : {"on", "off"}) {
    ScopedEnv env("DETVERIFY_CPU_REGIONS", value);
    EXPECT_NO_THROW(MakeCpuBackend({2, CpuIsa::kScalar, false, std::nullopt, true}));
  }
  ScopedEnv env("DETVERIFY_CPU_REGIONS", "yes");
  try {
    MakeCpuBackend({2, CpuIsa::kScalar, false, std::nullopt, true});
    FAIL() << "no exception";
  } catch (const BackendError& e) {
    EXPECT_EQ(std::string(e.what()), "DETVERIFY_CPU_REGIONS='yes': expected on or off");
  }
}

TEST(CpuPrefetch, ParsesOffDefaultAndByteCounts) {
  EXPECT_EQ(ParsePrefetchBytes("off", 2048), 0);
  EXPECT_EQ(ParsePrefetchBytes("default", 2048), 2048);
  EXPECT_EQ(ParsePrefetchBytes("0", 2048), 0);
  EXPECT_EQ(ParsePrefetchBytes("64", 2048), 64);
  EXPECT_EQ(ParsePrefetchBytes("65536", 2048), 65536);
  for (const char* bad :
       {"", "on", "-64", "+64", "64 ", "0x40", "65600", "63", "99999999999999999999"}) {
    try {
      ParsePrefetchBytes(bad, 2048);
      FAIL() << "no exception for '" << bad << "'";
    } catch (const BackendError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("DETVERIFY_PREFETCH='") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(CheckedPrefetchBytes(-64, "x"), BackendError);
  EXPECT_EQ(CheckedPrefetchBytes(128, "x"), 128);
}

}  // namespace
}  // namespace dv
