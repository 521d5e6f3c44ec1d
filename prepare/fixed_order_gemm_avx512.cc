// The fixed-order GEMM kernel for the avx512 level (prepare/CMakeLists.txt sets its flags).
#define DV_GEMM_PANELS GemmPanelsAvx512
#define DV_GEMM_ROWS 8
#include "prepare/fixed_order_gemm_kernel.h"
