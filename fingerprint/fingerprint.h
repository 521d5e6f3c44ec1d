// The hardware and build fingerprint recorded with every run: what machine and which build
// produced a hash. Its canonical form identifies the machine (MachineId).
//
// Schema (fingerprint_version 1); integers, strings, booleans and null only, never floats:
//   fingerprint_version  int     1; bumped when keys change
//   cpu_model            string  Linux: /proc/cpuinfo "model name" (x86), implementer/part or
//                                "Hardware" (aarch64), vendor/machine (s390x); macOS:
//                                machdep.cpu.brand_string; uname machine as a fallback (os/)
//   arch                 string  architecture this binary was built for: x86_64, aarch64, s390x...
//   byte_order           string  "little" | "big"
//   emulated             bool    running under user-mode emulation (see CollectFingerprint)
//   isa                  object  feature -> bool, the features the backends dispatch on:
//                                x86_64: sse4_2 avx2 fma avx512f avx512bw avx512vl avx512_vnni
//                                avx_vnni; aarch64: asimd asimddp i8mm sve; others: {}
//   logical_cores        int     online logical CPUs
//   memory_bytes         int     /proc/meminfo MemTotal (macOS: hw.memsize)
//   os, kernel           string  /etc/os-release PRETTY_NAME (macOS: "macOS <version>"); uname
//   release compiler, cxx_flags, build_type   string  from the generated build_info.h libraries
//   object  sqlite, openssl, yaml_cpp, nlohmann_json: version strings
//                                ("unknown" for sqlite and yaml_cpp in detverify-engine, the
//                                engine-only binary, which links neither)
//   tool_version, spec_version, git_commit   string
//   gpu                  null | object  a cuda row's device (engine/backends/cuda_backend.cc):
//                                name, compute_capability, memory_bytes, driver, runtime,
//                                cublaslt (versions), gemm (the kernel option) and
//                                gemm_algorithms (the kernel and cuBLASLt algorithm chosen per
//                                GEMM shape), forward ("resident": the whole pass on the
//                                device; "host rows") and cuda_graphs ("on" / "off", the row's
//                                request); these three are left out of MachineId;
//                                null for host backends
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dv::fingerprint {

inline constexpr int kFingerprintVersion = 1;

// The fingerprint of this machine and build (schema above). `gpu` is stored as-is under "gpu"; a
// CUDA build passes an object such as {"name", "driver", "runtime", "compute_capability"}.
// Emulation is reported when the environment variable DETVERIFY_EMULATED=1 is set (the cross-ISA
// runner sets it when it launches the binary under qemu-user) or when /proc/cpuinfo describes
// another architecture than the one this binary was built for (qemu-user passes the host's cpuinfo
// through), or when macOS reports the process as translated (Rosetta 2). The OS facts come from
// os/os_facts.h. Never throws for missing OS files; fields fall back to "unknown" or 0.
nlohmann::json CollectFingerprint(nlohmann::json gpu = nullptr);

// Lowercase hex SHA-256 of CanonicalJson(fingerprint) without gpu.gemm_algorithms,
// gpu.forward and gpu.cuda_graphs (facts of the run, not of the machine). A cuda row's fingerprint
// has its GPU, so its machine id names the host with that GPU, not the host alone. Throws
// CanonicalJsonError when the fingerprint holds a float.
std::string MachineId(const nlohmann::json& fingerprint);

// A short label for report tables, e.g. "AMD EPYC 9654 (cpu)", "NVIDIA H200 (cuda)",
// "AMD EPYC 9654 (aarch64 emulated)". The GPU name is used when `backend` is "cuda" and the
// fingerprint has one. Never empty; tolerant of fingerprints with missing keys.
std::string DeviceLabel(const nlohmann::json& fingerprint, std::string_view backend = "cpu");

}  // namespace dv::fingerprint
