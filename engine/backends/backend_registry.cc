#include "engine/backends/backend_registry.h"


#include "engine/backends/cpu_backend.h"
#include "engine/backends/reference_backend.h"

namespace dv {

std::vector<std::string> AvailableBackends() { return {"reference", "cpu"}; }

bool BackendAvailable(const std::string& name) {
  for (const std::string& n : AvailableBackends()) {
    if (n == name) return true;
  }
  return false;
}

std::unique_ptr<Backend> MakeBackend(const std::string& name, const BackendOptions& options) {
  if (name == "reference") return MakeReferenceBackend();
  if (name == "cpu") {
    CpuBackendOptions cpu;
    cpu.threads = options.threads;
    return MakeCpuBackend(cpu);
  }
  std::string known;
  for (const std::string& n : AvailableBackends()) known += (known.empty() ? "" : ", ") + n;
  if (name == "cuda") {
    throw BackendError("backend '" + name + "' is not available in this build (available: " + known + ")");
  }
  throw BackendError("unknown backend '" + name + "' (available: " + known + ")");
}

}  // namespace dv
