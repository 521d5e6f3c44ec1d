// What the operating system says about this machine and this process, one small function per
// fact, with a Linux implementation (/proc, /sys, /etc/os-release, uname, getauxval,
// sched_getaffinity) and a macOS one (sysctl, uname, getrusage; no transparent huge pages).
// Everything else in detverify asks here instead of reading OS files itself. No function throws;
// a fact the OS does not give reads as "" (strings), 0 or -1 (numbers, as documented), false.
#pragma once

#include <cstdint>
#include <string>

namespace dv::os {

// The CPU as the OS describes it.
struct CpuFacts {
  std::string model;  // printable ASCII: "AMD EPYC 9654 96-Core Processor", "Apple M2 Pro", ...
  // The architecture the OS's description belongs to ("x86_64", "aarch64", "s390x"), judged from
  // markers only one family prints; "" when unrecognised. qemu-user passes the host's through,
  // so it differing from the compiled architecture means emulation.
  std::string described_arch;
  bool translated = false;  // the OS reports the process as translated (macOS Rosetta 2)
};
CpuFacts ReadCpuFacts();

// AArch64 features the backends dispatch on, as the kernel grants them to this process (Linux
// HWCAP, macOS hw.optional.arm.*). All false on other architectures.
struct Aarch64Features {
  bool asimd = false, asimddp = false, i8mm = false, sve = false;
};
Aarch64Features ReadAarch64Features();

// Asks the OS to let this process use the x86 AMX tile data registers (Linux >= 5.16:
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), which every thread then may use); true
// when granted now or before. false on other OSes and architectures, and where the kernel or
// the CPU refuses.
bool RequestAmxTileData();

int64_t OnlineCpuCount();       // online logical CPUs, 0 when unknown
int UsableCpuCount();           // CPUs this process may run on (affinity), at least 1
int64_t PhysicalMemoryBytes();  // 0 when unknown
// One CPU's share of the level-2 cache the first CPU uses: its size divided by the CPUs that
// share it (Linux sysfs cache/index*/{level,type,size,shared_cpu_list}; macOS
// hw.perflevel0.l2cachesize / hw.perflevel0.cpusperl2, else hw.l2cachesize). 0 when unknown.
int64_t L2CacheBytesPerCpu();
std::string OsName();  // "Debian GNU/Linux 12 (bookworm)", "macOS 14.2.1", or uname's sysname
std::string KernelRelease();  // uname release, "" when unknown
std::string MachineName();    // uname machine, "" when unknown

// The absolute path of the running executable, "" when the OS will not say.
std::string SelfExecutablePath();

// This process's peak resident set in bytes, -1 when unknown.
int64_t PeakRssBytes();
// Resets the peak to the current resident set (Linux >= 4.0); false where that is impossible.
bool ResetPeakRss();

}  // namespace dv::os
