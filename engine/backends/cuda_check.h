// The cuda backend's one-line errors for a failed CUDA runtime call (its .cc and .cu files).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "engine/backends/backend_error.h"

namespace dv {

// BackendError "cuda backend: <what>: <the runtime's message>".
[[noreturn]] inline void ThrowCuda(cudaError_t e, const char* what) {
  throw BackendError(std::string("cuda backend: ") + what + ": " + cudaGetErrorString(e));
}
inline void CudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) ThrowCuda(e, what);
}

}  // namespace dv
