#include "cuda_device/cuda_device.h"

#include <cuda_runtime_api.h>

namespace dv {

int CudaDeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why != nullptr) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear it: the next call must not report this one
    return 0;
  }
  if (count == 0 && why != nullptr) *why = "cudaGetDeviceCount: 0 devices";
  return count;
}

void CudaStreamDeleter::operator()(CUstream_st* stream) const { cudaStreamDestroy(stream); }

}  // namespace dv
