// IntQwen3: the integer-only Qwen3 forward pass of detllm-v1 (docs/SPEC.md §5).
//
// Rows are independent: every dynamic scale is per token (or per token and head), each row has
// its own KV cache, and masked work never enters a sum. So a row's logits do not depend on its
// batch neighbours, on how its prompt was split into forward calls, or on the backend.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/expected_error.h"
#include "engine/backends/backend.h"
#include "engine/dyadic.h"
#include "engine/model_weights.h"
#include "engine/trace_recorder.h"

namespace dv {

// The int8 K/V cache of one row: per (layer, KV head) a K and a V region in the decode layout
// of engine/backends/row_ops.h (KvKOffset, KvVOffset). A slot is written once, when its token
// passes the layer, and never modified. Its memory comes from the backend that reads it.
class KvCache {
 public:
  KvCache(const ModelConfig& config, int64_t capacity, Backend& backend);
  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }
  KvHeadView view(int64_t layer, int64_t kv_head) const {
    const size_t at = Offset(layer, kv_head);
    return {K() + at, V() + at, head_dim_};
  }
  // The whole K and V regions and the bytes of one (layer, KV head) in each: (layer, kv_head)
  // starts at (layer * n_kv_heads + kv_head) * head_bytes(). For a backend that runs the whole
  // forward pass on its own device (engine/backends/device_forward.h).
  int8_t* k_data() const { return K(); }
  int8_t* v_data() const { return V(); }
  int64_t head_bytes() const { return head_bytes_; }
  // Stores k8[d], v8[d] as slot `slot` of (layer, kv_head).
  void Write(int64_t layer, int64_t kv_head, int64_t slot, const int8_t* k8, const int8_t* v8);
  void Advance(int64_t n) { length_ += n; }

 private:
  size_t Offset(int64_t layer, int64_t kv_head) const {
    return static_cast<size_t>((layer * n_kv_ + kv_head) * head_bytes_);
  }
  int64_t n_kv_, head_dim_, capacity_, head_bytes_;
  int8_t* K() const { return reinterpret_cast<int8_t*>(k_->data()); }
  int8_t* V() const { return reinterpret_cast<int8_t*>(v_->data()); }
  int64_t length_ = 0;
  std::unique_ptr<KvStorage> k_, v_;  // zero-filled: padding bytes of the layout stay 0
};

// int64 wrap events (docs/SPEC.md §8.2) by where the product a*m of a quantization left int64.
struct WrapEvents {
  int64_t q_quant = 0;     // W1: the Q quantization, one per (layer, token, q head)
  int64_t down_input = 0;  // W2: the down-projection input quantization, one per (layer, token)
  int64_t other = 0;       // any other QuantI8PerToken / RequantI8RowCol (bounded: §6.4)
  int64_t total() const { return q_quant + down_input + other; }
};

// A forward call DetLLM's reference refuses because it would divide by zero (docs/SPEC.md
// §2.3): an expected failure of this artifact and input, one line, never logits.
class ArithmeticError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

// One row of a forward call: n_tokens new tokens appended at positions cache->length() onward.
struct ForwardRow {
  KvCache* cache = nullptr;
  const int32_t* ids = nullptr;
  int64_t n_tokens = 0;
  // [V] logits of the last token, or null. A call's rows whose last_logits lie back to back
  // (row i's at row 0's + i * V, in the call's order of such rows) get them straight from one
  // LM head product; other layouts cost a copy of each row's logits.
  int32_t* last_logits = nullptr;
  int32_t* all_logits = nullptr;  // [n_tokens, V] logits of every token, or null
  // [n_tokens] each: every token's logit row scale (m, k), or null. The logit of token v is then
  // logits[v] * head_m[v] * m / 2^(k + head.k) (SPEC §5.3, "Final"); the greedy pick drops the
  // row scale, analyses outside the core (compare, ppl) need it.
  int64_t* all_scale_m = nullptr;
  int64_t* all_scale_k = nullptr;
};

// Where forward calls spend their time, for a benchmark (IntQwen3::set_profile): the wall time of
// whole calls and of their weight products, and the int8 weight bytes those products read (k x n
// each, once per product whatever the row count). Only the host pass adds to it: a backend's
// resident pass (Backend::MakeResidentForward) runs its products asynchronously on a device,
// where host clocks around them would measure nothing.
struct ForwardProfile {
  int64_t calls = 0;
  int64_t total_ns = 0;
  int64_t layer_ns = 0;  // the decoder layers' products (q/k/v, o, gate/up, down)
  int64_t layer_bytes = 0;
  int64_t head_ns = 0;  // the LM head's
  int64_t head_bytes = 0;
};

// Throws the ArithmeticError of a forward call that divided by zero (docs/SPEC.md §2.3, §9):
// counts of K-cache denominators, V-cache denominators and DI-Exp divisors that were 0.
void ThrowIfDividedByZero(int64_t zero_k, int64_t zero_v, int64_t zero_exp);

class IntQwen3 {
 public:
  // weights (and what its pointers borrow) must outlive the model. Its shape must keep the
  // overflow bounds (CheckShapeBounds; the artifact loader checks them).
  IntQwen3(const ModelWeights& weights, Backend& backend);
  ~IntQwen3();

  const ModelConfig& config() const { return w_.config; }
  const ModelWeights& weights() const { return w_; }
  Backend& backend() { return backend_; }

  // Runs one forward call over several rows (batched: their tokens share every weight GEMM).
  // Where the backend has its own forward pass (Backend::MakeResidentForward), an untraced call
  // runs there. trace, when given, requires exactly one row. Throws ArithmeticError where the call
  // would divide by zero (docs/SPEC.md §2.3); the rows' caches then keep their length.
  void Forward(std::span<ForwardRow> rows, TraceSink* trace = nullptr);

  // Greedy pick: argmax over v of logits[v] * head_m[v] (int64), ties to the lowest id.
  int32_t GreedyPick(const int32_t* logits) const;

  // int64 wrap events seen so far (SPEC §8), a diagnostic; reset with ResetWrapEvents.
  int64_t wrap_events() const { return wraps_.total(); }
  const WrapEvents& wrap_events_by_site() const { return wraps_; }
  void ResetWrapEvents() { wraps_ = {}; }

  // Adds every later host forward call's times to *profile (null: stops). Two clock reads a
  // product, about a hundred products a call: negligible beside a call, but only a benchmark
  // asks for them.
  void set_profile(ForwardProfile* profile) { profile_ = profile; }

 private:
  struct Workspace;
  struct PackedLayer;
  void PackWeights();  // the products' weights (packed_, head_), through the backend
  void EnsureWorkspace(int64_t tokens, int64_t max_slots, int64_t rows);
  void ThrowOnDivisionByZero();
  // The forward pass's steps (model.cc), each recording its tensors through `tr` when traced.
  void AttentionBlock(int64_t layer, TraceRecorder& tr);
  void QkvHeads(int64_t layer, const std::string& pre, TraceRecorder& tr);
  void Attention(int64_t layer, const std::string& pre, TraceRecorder& tr);
  void MlpBlock(int64_t layer, TraceRecorder& tr);
  void AddToResidual(const LinearWeights& proj, const std::string& pre, const char* product,
                     const char* delta, TraceRecorder& tr);
  void NormQuant(const std::vector<int64_t>* smooth_m, int64_t smooth_k, int8_t* x8, int64_t* xm,
                 int64_t* xk, const std::string& pre, TraceRecorder& tr);
  void LmHead(std::span<ForwardRow> rows);
  // The backend's product of a (m rows) with the weights w into c (Backend::MatmulI8Fused), timed
  // into profile_ when there is one: as a layer's product, or the LM head's.
  void Multiply(const int8_t* a, int64_t m, std::span<const PackedWeight* const> w,
                std::span<int32_t* const> c, bool head = false);
  void Multiply(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c, bool head = false);
  // Tells the backend which weights the next product reads (Backend::WillMultiply): those of
  // layer `layer` starting with `first` (0 q/k/v, 1 o, 2 gate/up, 3 down), or the LM head past
  // the last layer.
  void AnnounceProduct(int64_t layer, int first) const;

  const ModelWeights& w_;
  Backend& backend_;
  const RowOps& ops_;  // backend_.row_ops()
  std::vector<PackedLayer> packed_;
  std::unique_ptr<PackedWeight> head_;
  std::unique_ptr<ResidentForward> resident_;  // the backend's own pass, or null
  std::unique_ptr<Workspace> ws_;
  WrapEvents wraps_;
  ForwardProfile* profile_ = nullptr;
};

}  // namespace dv
