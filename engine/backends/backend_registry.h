// Backends by kind (base/run_kinds.h): "reference" always; "cpu" and "cuda" when built. The one
// place that knows every backend. Unknown or unavailable ones give a BackendError naming what
// this build offers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/run_kinds.h"
#include "engine/backends/backend.h"

namespace dv {

struct BackendOptions {
  int threads = 0;          // 0: every CPU this process may run on (cpu backend)
  std::string cpu_isa;      // cpu backend: a level name, or "" for DETVERIFY_CPU_ISA or the widest
  bool cuda_graphs = true;  // cuda backend: decode calls as CUDA graphs
};

// A backend as it will run: its kind, its thread count and, for the cpu backend, its SIMD level.
struct ResolvedBackend {
  BackendKind kind = BackendKind::kReference;
  int threads = 1;
  std::string isa;          // "avx512vnni", ... for cpu; "" for the others
  bool cuda_graphs = true;  // cuda: decode calls as CUDA graphs
};

// What `options` amount to here. Throws BackendError when the kind is not available, or the
// requested ISA level is unknown or unsupported by this CPU.
ResolvedBackend ResolveBackend(BackendKind kind, const BackendOptions& options = {});
// The thread count a backend of `kind` runs with when none is asked for (cpu: every CPU this
// process may run on, and for cuda the host threads of its row work; reference: 1).
int DefaultBackendThreads(BackendKind kind);
// Exactly that backend (the level and thread count given, nothing re-chosen).
std::unique_ptr<Backend> MakeBackend(const ResolvedBackend& resolved);
std::unique_ptr<Backend> MakeBackend(BackendKind kind, const BackendOptions& options = {});
// By name ("reference", "cpu", "cuda"); an unknown name is a BackendError.
// The backend a user's spelling names; BackendError naming the available ones otherwise.
BackendKind ParseBackendName(const std::string& name);
std::unique_ptr<Backend> MakeBackend(const std::string& name, const BackendOptions& options = {});

std::vector<std::string> AvailableBackends();
// True when `kind` is a backend this build and machine can run (e.g. false for cuda without GPU).
bool BackendAvailable(BackendKind kind);
bool BackendAvailable(const std::string& name);
// Why `kind` cannot run here ("" when it can), in words for a skipped row: e.g. "no CUDA device
// here (cudaGetDeviceCount: no CUDA-capable device is detected)".
std::string BackendAbsence(BackendKind kind);

}  // namespace dv
