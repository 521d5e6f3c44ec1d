// The macOS implementation of os/ (os_facts_macos.cc, huge_pages_macos.cc), compiled on Linux
// against macOS's declarations of sysctlbyname and _NSGetExecutablePath (macos_shim/) and run
// over a fake table of sysctl values (fake_macos.cc). What this cannot show: that the sysctl
// names and widths are those of every macOS release; README.md says what is untested on macOS.
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>

#include "os/huge_pages.h"
#include "os/os_facts.h"
#include "tests/os/fake_macos.h"

namespace dv::os {
namespace {

using fake_macos::Sysctls;

class MacosFacts : public ::testing::Test {
 protected:
  void SetUp() override {
    Sysctls() = {
        {"machdep.cpu.brand_string", std::string("Apple M2 Pro")},
        {"hw.logicalcpu", int32_t{12}},
        {"hw.activecpu", int32_t{10}},
        {"hw.memsize", int64_t{34359738368}},
        {"kern.osproductversion", std::string("14.2.1")},
        {"hw.optional.AdvSIMD", int32_t{1}},
        {"hw.optional.arm.FEAT_DotProd", int32_t{1}},
        {"hw.optional.arm.FEAT_I8MM", int32_t{0}},
        {"hw.perflevel0.l2cachesize", int64_t{16777216}},
        {"hw.perflevel0.cpusperl2", int32_t{4}},
        {"hw.l2cachesize", int64_t{4194304}},
    };
  }
};

TEST_F(MacosFacts, ReadsTheSysctls) {
  EXPECT_EQ(ReadCpuFacts().model, "Apple M2 Pro");
  EXPECT_FALSE(ReadCpuFacts().translated);
  EXPECT_EQ(OnlineCpuCount(), 12);
  EXPECT_EQ(UsableCpuCount(), 10);
  EXPECT_EQ(PhysicalMemoryBytes(), int64_t{34359738368});
  EXPECT_EQ(L2CacheBytesPerCpu(), int64_t{4194304}) << "16 MiB shared by 4 performance cores";
  EXPECT_EQ(OsName(), "macOS 14.2.1");
  const Aarch64Features f = ReadAarch64Features();
  EXPECT_TRUE(f.asimd);
  EXPECT_TRUE(f.asimddp);
  EXPECT_FALSE(f.i8mm);
  EXPECT_FALSE(f.sve);
}

TEST_F(MacosFacts, IntelMacsGiveOneL2PerCore) {
  Sysctls().erase("hw.perflevel0.l2cachesize");
  Sysctls().erase("hw.perflevel0.cpusperl2");
  Sysctls()["hw.l2cachesize"] = int64_t{262144};
  EXPECT_EQ(L2CacheBytesPerCpu(), 262144);
}

TEST_F(MacosFacts, RosettaIsEmulation) {
  Sysctls()["sysctl.proc_translated"] = int32_t{1};
  EXPECT_TRUE(ReadCpuFacts().translated);
}

TEST_F(MacosFacts, MissingSysctlsFallBack) {
  Sysctls().clear();
  EXPECT_EQ(ReadCpuFacts().model, MachineName()) << "uname machine when there is no brand";
  EXPECT_EQ(OnlineCpuCount(), 0);
  EXPECT_EQ(UsableCpuCount(), 1);
  EXPECT_EQ(PhysicalMemoryBytes(), 0);
  EXPECT_EQ(L2CacheBytesPerCpu(), 0);
  EXPECT_FALSE(OsName().empty()) << "uname sysname";
  EXPECT_FALSE(ReadAarch64Features().asimddp);
  EXPECT_FALSE(ResetPeakRss()) << "macOS cannot reset the peak";
  EXPECT_GT(PeakRssBytes(), 0);
}

TEST_F(MacosFacts, StringsAreMadePrintable) {
  Sysctls()["machdep.cpu.brand_string"] = std::string("  Apple\x01M9\n ");
  EXPECT_EQ(ReadCpuFacts().model, "Apple?M9");
}

TEST_F(MacosFacts, ExecutablePathIsResolved) {
  fake_macos::ExecutablePath() = "/usr/bin/../bin/env";
  char resolved[PATH_MAX];
  ASSERT_NE(::realpath("/usr/bin/env", resolved), nullptr);
  EXPECT_EQ(SelfExecutablePath(), resolved);
}

TEST(MacosPages, NoTransparentHugePages) {
  EXPECT_STREQ(HugePageMode(), "none");
  EXPECT_EQ(AnonHugePageBytes(), -1);
}

}  // namespace
}  // namespace dv::os
