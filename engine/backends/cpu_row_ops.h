// The cpu backend's per-row operations: the plain definitions of RowOps, with the element loops
// run by the ISA's RowKernels (row_kernels_cpu.h: every division by a per-row divisor an exact
// multiply-shift, vectorized where the ISA allows) and the attention scores and context by its
// int8 kernels. Same bits as RowOps for every input: where a fast path's preconditions (no
// wrap, bounded sums) do not hold for a row, that row, or its remaining elements, take the plain
// path.
#pragma once

#include "engine/backends/attention_i8_cpu.h"
#include "engine/backends/cpu_features.h"
#include "engine/backends/row_kernels_cpu.h"
#include "engine/backends/row_ops.h"

namespace dv {

class CpuRowOps final : public RowOps {
 public:
  // prefetch_bytes: how far ahead the attention kernels ask for K/V bytes (the backend's
  // prefetch distance, DETVERIFY_PREFETCH; 0: none). It changes no result.
  explicit CpuRowOps(CpuIsa isa, int64_t prefetch_bytes = 0);

  void RmsNorm(const int32_t* x, int64_t n, int32_t* y) const override;
  void RmsNormGamma(const int32_t* x, int64_t n, const int64_t* gamma_m, int64_t* y) const override;
  Dyadic QuantI8(const int64_t* x, int64_t n, int64_t m, int64_t k, int8_t* x8,
                 WrapCounter* wraps) const override;
  Dyadic RequantI8RowColumn(const int64_t* p, const int64_t* col_m, int64_t n, int64_t row_m,
                            int64_t row_k, int64_t col_k, int64_t* s, int8_t* y8,
                            WrapCounter* wraps) const override;
  int64_t RequantI32(const int32_t* p, const int64_t* col_m, int64_t n, int64_t target_bits,
                     int32_t* y) const override;
  void RequantI8StaticRow(const int32_t* p, int64_t n, int64_t row_m, int64_t row_k,
                          const int64_t* col_m, int64_t col_k, int64_t s_m, int64_t s_k,
                          int8_t* y8) const override;
  void RequantI8StaticColumns(const int64_t* p, int64_t n, int64_t row_m, int64_t row_k,
                              const int64_t* s_m, const int64_t* s_k, int8_t* y8) const override;
  int64_t AddResidual(int32_t* h, int64_t n, int64_t k_res, const int32_t* d, int64_t dm,
                      int64_t dk) const override;
  void MulColumns(const int32_t* x, const int64_t* m, int64_t n, int64_t* y) const override;
  void MulColumns(const int64_t* x, const int64_t* m, int64_t n, int64_t* y) const override;
  void Rope(int64_t* x, int64_t d, const int16_t* cos_row, const int16_t* sin_row) const override;
  void Swiglu(const int32_t* gate, const int32_t* up, int64_t n, int64_t tpos,
              int64_t* y) const override;
  int32_t GreedyPick(const int32_t* logits, const int64_t* head_m, int64_t n) const override;
  int64_t Attend(const int8_t* q8, const KvHeadView& kv, int64_t n_slots, Dyadic scale,
                 int32_t* scores, int64_t* exps, int32_t* probs, int64_t* ctx) const override;
  void AttendGroup(int64_t queries, const int8_t* q8, const KvHeadView& kv, int64_t n_slots,
                   const Dyadic* scales, int64_t slot_stride, int32_t* scores, int64_t* exps,
                   int32_t* probs, int64_t* ctx, int64_t* tpos) const override;

 private:
  // Whether Attend's fast path (int32 kernels, multiply-shift divisions) holds for a query.
  static bool AttendFast(int64_t head_dim, int64_t n_slots, int64_t tpos);
  int64_t Softmax(const int32_t* scores, int64_t n_slots, int64_t tpos, int64_t* exps,
                  int32_t* probs) const;

  const RowKernels& k_;       // this ISA's element loops
  const RowKernels& scalar_;  // finishes rows a vector loop stops early on
  const AttentionI8Kernel& attention_;
  int64_t prefetch_bytes_;
};

}  // namespace dv
