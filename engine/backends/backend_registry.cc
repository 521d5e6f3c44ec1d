#include "engine/backends/backend_registry.h"

#include "engine/backends/cpu_backend.h"
#include "engine/backends/reference_backend.h"

namespace dv {
namespace {

std::string AvailableList() {
  std::string known;
  for (const std::string& n : AvailableBackends()) known += (known.empty() ? "" : ", ") + n;
  return known;
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
      return false;  // no cuda backend in this build (DETVERIFY_CUDA)
  }
  return false;
}

bool BackendAvailable(const std::string& name) {
  const std::optional<BackendKind> kind = ParseKind<BackendKind>(name);
  return kind && BackendAvailable(*kind);
}

int DefaultBackendThreads(BackendKind kind) {
  return kind == BackendKind::kCpu ? CpuBackendDefaultThreads() : 1;
}

ResolvedBackend ResolveBackend(BackendKind kind, const BackendOptions& options) {
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
    case BackendKind::kCuda:
      break;
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
