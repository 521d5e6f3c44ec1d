// os/ on the machine the tests run on: facts within sane ranges, aligned zero-filled mappings,
// the executable's path.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "os/huge_pages.h"
#include "os/os_facts.h"

namespace dv::os {
namespace {

TEST(OsFacts, AreSane) {
  EXPECT_FALSE(ReadCpuFacts().model.empty());
  EXPECT_GE(OnlineCpuCount(), 1);
  EXPECT_GE(UsableCpuCount(), 1);
  EXPECT_LE(UsableCpuCount(), OnlineCpuCount() > 0 ? OnlineCpuCount() : 4096);
  EXPECT_GT(PhysicalMemoryBytes(), int64_t{1} << 26);
  EXPECT_FALSE(OsName().empty());
  EXPECT_FALSE(KernelRelease().empty());
  EXPECT_GT(PeakRssBytes(), 0);
  const std::string exe = SelfExecutablePath();
  EXPECT_NE(exe.find("os_test"), std::string::npos) << exe;
  EXPECT_EQ(exe.front(), '/');
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
