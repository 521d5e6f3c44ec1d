// The cpu backend: SIMD int8 kernels chosen at run time by CPU features, a persistent thread
// pool, and weights re-laid-out once into huge-page-backed panels. Gives the reference
// backend's bits at every ISA level and thread count (tests/cpu_backend).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "engine/backends/backend.h"
#include "engine/backends/cpu_features.h"

namespace dv {

struct CpuBackendOptions {
  int threads = 0;            // 0: every CPU this process may run on
  std::optional<CpuIsa> isa;  // unset: CpuIsaFromEnvironment() (DETVERIFY_CPU_ISA or best)
  bool huge_pages = true;     // advise MADV_HUGEPAGE for the packed weights
  // How far ahead of its weight loads the GEMM prefetches, in bytes (0: off). Unset:
  // DETVERIFY_PREFETCH (off | default | bytes) or the ISA kernel's own distance. Only the speed
  // depends on it, never a result.
  std::optional<int64_t> prefetch_bytes;
  // A forward pass as one team region (RunRegion, os::Team). false, or DETVERIFY_CPU_REGIONS=off:
  // one pool job per loop, as before regions existed (a switch for measuring the difference).
  bool regions = true;
};

// The largest prefetch distance accepted (64 KiB: far beyond any useful one).
inline constexpr int64_t kMaxPrefetchBytes = 65536;

// One memory-read bandwidth measurement (integers only: the caller turns them into GB/s).
struct ReadBandwidthSample {
  int64_t bytes = 0;    // bytes read per pass
  int64_t best_ns = 0;  // fastest pass
  int threads = 0;
  bool huge_pages = false;       // MADV_HUGEPAGE was advised for the buffer
  int64_t huge_page_bytes = -1;  // of the buffer actually backed by huge pages (-1: unknown)
  int64_t prefetch_bytes = 0;    // the software prefetch of the fastest pass (0: plain loads)
};

class CpuBackend : public Backend {
 public:
  // Reads a `bytes`-sized buffer (anonymous memory, huge pages advised when `huge_pages`) with
  // every thread of the pool and the GEMV's loads, `repeats` times after one warm-up pass, with
  // and without the kernel's software prefetch (alternating), and reports the fastest pass: the
  // bandwidth the weight stream of a decode step can reach.
  virtual ReadBandwidthSample MeasureReadBandwidth(int64_t bytes, int repeats, bool huge_pages) = 0;
  virtual CpuIsa isa() const = 0;
  // Bytes of packed (re-laid-out) weights held by this backend.
  virtual int64_t packed_weight_bytes() const = 0;
  virtual bool huge_pages() const = 0;
  // The GEMM's software prefetch distance in bytes (0: none).
  virtual int64_t prefetch_bytes() const = 0;
  // Whether a forward pass runs as one team region (CpuBackendOptions::regions).
  virtual bool regions() const = 0;
};

// Throws BackendError when the requested ISA level is unknown or unsupported here.
std::unique_ptr<CpuBackend> MakeCpuBackend(const CpuBackendOptions& options = {});

// CPUs this process may run on (os::UsableCpuCount: its affinity on Linux), at least 1.
int CpuBackendDefaultThreads();

// DETVERIFY_PREFETCH's value: "off" (0), "default" (kernel_default) or a byte count that
// CheckedPrefetchBytes accepts. Throws BackendError naming the variable and the value.
int64_t ParsePrefetchBytes(std::string_view text, int64_t kernel_default);
// `bytes` when it is a multiple of 64 in [0, kMaxPrefetchBytes]; else throws BackendError that
// begins with `what`.
int64_t CheckedPrefetchBytes(int64_t bytes, std::string_view what);

}  // namespace dv
