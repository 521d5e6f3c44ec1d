// os/ on the machine the tests run on: facts within sane ranges, aligned zero-filled mappings,
// the executable's path.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "os/huge_pages.h"
#include "os/os_facts.h"
#include "os/os_text.h"

namespace dv::os {
namespace {

TEST(OsFacts, AreSane) {
  EXPECT_FALSE(ReadCpuFacts().model.empty());
  EXPECT_GE(OnlineCpuCount(), 1);
  EXPECT_GE(UsableCpuCount(), 1);
  EXPECT_LE(UsableCpuCount(), OnlineCpuCount() > 0 ? OnlineCpuCount() : 4096);
  EXPECT_GT(PhysicalMemoryBytes(), int64_t{1} << 26);
  // 0 where the OS will not say (some VMs and emulators); otherwise a plausible per-CPU share.
  const int64_t l2 = L2CacheBytesPerCpu();
  EXPECT_TRUE(l2 == 0 || (l2 >= 16 * 1024 && l2 <= int64_t{1} << 30)) << l2;
  EXPECT_FALSE(OsName().empty());
  EXPECT_FALSE(KernelRelease().empty());
  EXPECT_GT(PeakRssBytes(), 0);
  const std::string exe = SelfExecutablePath();
  EXPECT_NE(exe.find("os_test"), std::string::npos) << exe;
  EXPECT_EQ(exe.front(), '/');
}

TEST(OsText, SysfsCacheSizes) {
  EXPECT_EQ(internal::ParseCacheSize("48K\n"), 48 * 1024);
  EXPECT_EQ(internal::ParseCacheSize("2048K"), 2048 * 1024);
  EXPECT_EQ(internal::ParseCacheSize("1M"), 1 << 20);
  EXPECT_EQ(internal::ParseCacheSize("32768"), 32768);
  for (const char* bad : {"", "K", "-1K", "12X", "1.5M", "99999999999999999999K", "2 K"}) {
    EXPECT_EQ(internal::ParseCacheSize(bad), -1) << bad;
  }
}

TEST(OsText, SysfsCpuLists) {
  EXPECT_EQ(internal::CountCpuList("0\n"), 1);
  EXPECT_EQ(internal::CountCpuList("0-1"), 2);
  EXPECT_EQ(internal::CountCpuList("0,4-5,8"), 4);
  for (const char* bad : {"", "a", "3-1", "0,", ",0", "0--1", "1-"}) {
    EXPECT_EQ(internal::CountCpuList(bad), 0) << bad;
  }
}

TEST(HugePages, MappingsAreAlignedAndZeroed) {
  for (const bool huge : {true, false}) {
    const size_t size = 3 * kHugePageBytes;
    uint8_t* p = MapAligned(size, huge);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
    for (size_t i = 0; i < size; i += 4096) ASSERT_EQ(p[i], 0);
    p[size - 1] = 7;  // writable to its end
    UnmapAligned(p, size);
  }
  const std::string mode = HugePageMode();
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "none" ||
              mode == "unknown")
      << mode;
}

}  // namespace
}  // namespace dv::os
