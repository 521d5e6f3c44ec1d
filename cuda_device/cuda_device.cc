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

size_t CudaFreeBytes() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free_bytes;
}

std::string CudaDeviceUnusable(int device) {
  std::string why;
  const int count = CudaDeviceCount(&why);
  if (count == 0) return "no CUDA device here (" + why + ")";
  if (device < 0 || device >= count) {
    return "device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
           " found)";
  }
  return "";
}

std::string SelectCudaDevice(int device) {
  if (std::string why = CudaDeviceUnusable(device); !why.empty()) return why;
  if (const cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
    return std::string("cudaSetDevice: ") + cudaGetErrorString(e);
  }
  return "";
}

CudaStream MakeCudaStream(std::string* error) {
  cudaStream_t stream = nullptr;
  if (const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      e != cudaSuccess) {
    if (error != nullptr) *error = std::string("cudaStreamCreate: ") + cudaGetErrorString(e);
    return nullptr;
  }
  return CudaStream(stream);
}

void CudaStreamDeleter::operator()(CUstream_st* stream) const { cudaStreamDestroy(stream); }

}  // namespace dv
