// The CUDA device facts and runtime owners that the cuda backend and the float engine's fp16
// GEMMs share. No CUDA header is needed to include this one.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace dv {

// Devices the CUDA runtime sees; 0 when there are none or the runtime cannot start (no driver,
// no device node), with the reason in *why (one line, e.g. "cudaGetDeviceCount: no CUDA-capable
// device is detected" or "cudaGetDeviceCount: 0 devices"). Leaves no sticky error behind.
int CudaDeviceCount(std::string* why = nullptr);

// Why device number `device` cannot be used, in one line -- "no CUDA device here
// (cudaGetDeviceCount: ...)" or "device 2 does not exist (1 found)" -- or "" when it can.
std::string CudaDeviceUnusable(int device);

// Makes `device` the calling thread's current device: "" on success, else why not in one line
// (CudaDeviceUnusable's reasons, or "cudaSetDevice: <the runtime's message>").
std::string SelectCudaDevice(int device);

// Bytes free on the current device (cudaMemGetInfo); 0 when the runtime cannot say. Leaves no
// sticky error behind.
size_t CudaFreeBytes();

struct CudaStreamDeleter {
  void operator()(CUstream_st* stream) const;  // cudaStreamDestroy
};
// Owns a stream (cudaStreamCreate*'s result): destroyed with its owner, so a constructor that
// throws half way leaks nothing.
using CudaStream = std::unique_ptr<CUstream_st, CudaStreamDeleter>;

// A new non-blocking stream on the current device; null on failure, with "cudaStreamCreate:
// <the runtime's message>" in *error.
CudaStream MakeCudaStream(std::string* error);

}  // namespace dv
