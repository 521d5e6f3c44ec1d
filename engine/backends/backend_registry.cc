#include "engine/backends/backend_registry.h"

#include "engine/backends/cpu_backend.h"
#include "engine/backends/reference_backend.h"
#if defined(DV_HAVE_CUDA_BACKEND)
#include "cuda_device/cuda_device.h"
#include "engine/backends/cuda_backend.h"
#endif

namespace dv {
namespace {

std::string AvailableList() {
  std::string known;
  for (const std::string& n : AvailableBackends()) known += (known.empty() ? "" : ", ") + n;
  return known;
}

// The cuda backend's devices, asked once per process; "" when one is there, else why not.
const std::string& CudaAbsence() {
#if defined(DV_HAVE_CUDA_BACKEND)
  static const std::string why = CudaDeviceUnusable(0);
#else
  static const std::string why = "this build has no cuda backend (DETVERIFY_CUDA=OFF)";
#endif
  return why;
}

}  // namespace

std::vector<std::string> AvailableBackends() {
  std::vector<std::string> out;
  for (BackendKind kind : AllKinds<BackendKind>()) {
    if (BackendAvailable(kind)) out.emplace_back(KindName(kind));
  }
  return out;
}

bool BackendAvailable(BackendKind kind) {
  switch (kind) {
    case BackendKind::kReference:
    case BackendKind::kCpu:
      return true;
    case BackendKind::kCuda:
      return CudaAbsence().empty();
  }
  return false;
}

bool BackendAvailable(const std::string& name) {
  const std::optional<BackendKind> kind = ParseKind<BackendKind>(name);
  return kind && BackendAvailable(*kind);
}

int DefaultBackendThreads(BackendKind kind) {
  return kind == BackendKind::kReference ? 1 : CpuBackendDefaultThreads();
}

std::string BackendAbsence(BackendKind kind) {
  if (kind == BackendKind::kCuda) return CudaAbsence();
  return BackendAvailable(kind)
             ? std::string()
             : "backend " + std::string(KindName(kind)) + " is not in this build";
}

ResolvedBackend ResolveBackend(BackendKind kind, const BackendOptions& options) {
  if (kind == BackendKind::kCuda && !CudaAbsence().empty()) {
    throw BackendError("backend 'cuda': " + CudaAbsence());
  }
  if (!BackendAvailable(kind)) {
    throw BackendError("backend '" + std::string(KindName(kind)) +
                       "' is not available in this build (available: " + AvailableList() + ")");
  }
  ResolvedBackend r;
  r.kind = kind;
  if (kind == BackendKind::kCpu) {
    const CpuIsa isa =
        options.cpu_isa.empty() ? CpuIsaFromEnvironment() : ParseCpuIsa(options.cpu_isa);
    RequireCpuIsa(isa);
    r.isa = std::string(CpuIsaName(isa));
    r.threads = options.threads > 0 ? options.threads : CpuBackendDefaultThreads();
  }
  if (kind == BackendKind::kCuda) {
    // The host's share (the row work between GEMMs) runs on the cpu backend's threads.
    r.threads = options.threads > 0 ? options.threads : CpuBackendDefaultThreads();
    r.cuda_graphs = options.cuda_graphs;
  }
  return r;
}

std::unique_ptr<Backend> MakeBackend(const ResolvedBackend& r) {
  switch (r.kind) {
    case BackendKind::kReference:
      return MakeReferenceBackend();
    case BackendKind::kCpu: {
      CpuBackendOptions cpu;
      cpu.threads = r.threads;
      cpu.isa = ParseCpuIsa(r.isa);
      return MakeCpuBackend(cpu);
    }
    case BackendKind::kCuda: {
#if defined(DV_HAVE_CUDA_BACKEND)
      CudaBackendOptions cuda;
      cuda.host_threads = r.threads;
      cuda.graphs = r.cuda_graphs;
      return MakeCudaBackend(cuda);
#else
      break;
#endif
    }
  }
  throw BackendError("backend '" + std::string(KindName(r.kind)) +
                     "' is not available in this build (available: " + AvailableList() + ")");
}

std::unique_ptr<Backend> MakeBackend(BackendKind kind, const BackendOptions& options) {
  return MakeBackend(ResolveBackend(kind, options));
}

BackendKind ParseBackendName(const std::string& name) {
  const std::optional<BackendKind> kind = ParseKind<BackendKind>(name);
  if (!kind) {
    throw BackendError("unknown backend '" + name + "' (available: " + AvailableList() + ")");
  }
  return *kind;
}

std::unique_ptr<Backend> MakeBackend(const std::string& name, const BackendOptions& options) {
  return MakeBackend(ParseBackendName(name), options);
}

}  // namespace dv
