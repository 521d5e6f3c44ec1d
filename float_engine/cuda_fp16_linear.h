// The float engine's GEMMs on an NVIDIA GPU, as a float user runs them there: fp16 weights
// resident on the device, fp16 activations, cublasGemmEx with fp32 accumulation and cuBLAS's
// default heuristics (tensor cores, whatever algorithm and split it picks for the shape) -- what
// torch's fp16 nn.Linear calls. Its results depend on the shape by design: this is a contrast
// row, never judged. Built with DETVERIFY_CUDA (target dv_float_cuda); it needs a device at run
// time and says so in one line without one.
#pragma once

#include <memory>
#include <string>

#include "float_engine/float_linear.h"

namespace dv {

struct CudaFp16LinearOptions {
  int device = 0;
};

// Throws FloatEngineError without a usable device, or when the runtime or cuBLAS refuses.
std::shared_ptr<FloatLinearBackend> MakeCudaFp16Linear(const CudaFp16LinearOptions& options = {});

}  // namespace dv
