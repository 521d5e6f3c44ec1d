// The fixed-order GEMM kernel for the avx2 level (prepare/CMakeLists.txt sets its flags).
#define DV_GEMM_PANELS GemmPanelsAvx2
#define DV_GEMM_ROWS 4
#include "prepare/fixed_order_gemm_kernel.h"
