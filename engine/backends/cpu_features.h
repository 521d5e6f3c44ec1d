// The SIMD levels the cpu backend dispatches on, detected at run time from CPUID on x86-64 and
// from the kernel's hardware capabilities (AT_HWCAP) on aarch64 -- never from /proc/cpuinfo,
// which a hypervisor may trim -- and optionally forced by DETVERIFY_CPU_ISA.
//
// Every level computes the same bits (docs/NOTES.md, "cpu backend"); the override exists so one
// machine can test each of them against the reference backend.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dv {

// A host supports a subset. The values are fixed (benchmarks take them as arguments), so a new
// level gets the next number; SupportedCpuIsas() lists levels from the most portable to the
// widest.
enum class CpuIsa {
  kScalar = 0,      // portable C++: every host (compilers vectorize it for the host's baseline)
  kNeon = 1,        // aarch64 Advanced SIMD: vmull_s8 + vpadalq_s16 (exact, int16 products)
  kAvx2 = 2,        // x86-64 AVX2: int8 widened to int16, vpmaddwd (exact, no saturation)
  kAvx512Vnni = 3,  // x86-64 AVX-512 F/BW/VL/DQ + VNNI: vpdpbusd
  kNeonDot = 4,     // aarch64 FEAT_DotProd (Armv8.2 SDOT): four int8 products into int32 lanes
  kAmx = 5,  // x86-64 AMX-INT8 tiles (tdpbsud) for the GEMM, AVX-512 VNNI for the rest and for
             // products of few rows
};

// "scalar", "neon", "neondot", "avx2", "avx512vnni", "amx".
std::string_view CpuIsaName(CpuIsa isa);

// Parses a name as CpuIsaName writes it. Throws BackendError listing the known names.
CpuIsa ParseCpuIsa(std::string_view name);

// True when this CPU (CPUID, including the OS's register-state support; on aarch64 the kernel's
// HWCAP bits) and this build can run `isa`. For AMX it also asks the OS for the tile registers
// (os::RequestAmxTileData) the first time, and is false when refused.
bool CpuSupports(CpuIsa isa);

// Every level, most portable first (the order of SupportedCpuIsas), whether or not this CPU and
// this build can run it.
std::vector<CpuIsa> AllCpuIsas();

// Every level CpuSupports, most portable first.
std::vector<CpuIsa> SupportedCpuIsas();

// The widest supported level.
CpuIsa BestCpuIsa();

// The level the cpu backend uses when none is requested explicitly: DETVERIFY_CPU_ISA when set
// and non-empty, else BestCpuIsa(). Throws BackendError when the variable names an
// unknown level or one this CPU lacks (the message says which levels it has).
CpuIsa CpuIsaFromEnvironment();

// Checks an explicit request; throws BackendError as above when the CPU lacks it.
void RequireCpuIsa(CpuIsa isa);

}  // namespace dv
