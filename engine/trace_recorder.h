// Traces of a forward call: every intermediate tensor of a single-row call, named as DetLLM's
// reference trace names them, for locating the first operation where an implementation departs
// from it (tests/engine/test_trace.cc). The forward pass (model.cc) marks where each tensor is
// made with one call to a TraceRecorder; when no trace is asked for, every such call is a
// branch on a null pointer and allocates nothing, so decode loops stay allocation-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "engine/backends/row_ops.h"
#include "engine/model_weights.h"

namespace dv {

// Receives intermediate tensors of a single-row forward call. dims are this engine's layout
// (token-major: [T, heads, x]).
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void Record(const std::string& name, const std::vector<int64_t>& dims,
                      const std::vector<int64_t>& values) = 0;
};

// A tensor the forward pass's loops fill piece by piece (disjoint pieces from several threads
// are fine). Inert when tracing is off: every call returns at once.
class TraceTensor {
 public:
  TraceTensor() = default;
  template <typename T>
  void Put(int64_t at, const T* values, int64_t n) const {
    if (values_ != nullptr) std::copy_n(values, n, values_->begin() + at);
  }
  void Set(int64_t at, int64_t value) const {
    if (values_ != nullptr) (*values_)[static_cast<size_t>(at)] = value;
  }
  int64_t* data() const { return values_ != nullptr ? values_->data() : nullptr; }

 private:
  friend class TraceRecorder;
  explicit TraceTensor(std::vector<int64_t>* values) : values_(values) {}
  std::vector<int64_t>* values_ = nullptr;
};

class TraceRecorder {
 public:
  // `sink` may be null: nothing is recorded.
  explicit TraceRecorder(TraceSink* sink) : sink_(sink) {}
  bool on() const { return sink_ != nullptr; }

  // "layer3.attn." for layer 3, block ".attn."; "" (nothing built) when off.
  std::string Prefix(int64_t layer, const char* block) const;

  // A zero-filled tensor of `dims` named prefix + name, to be filled by the loops.
  TraceTensor Open(const std::string& prefix, const char* name,
                   std::initializer_list<int64_t> dims);

  // A tensor that is whole now: product(dims) values read from `values` ({} dims: one value).
  template <typename T>
  void Record(const std::string& prefix, const char* name, std::initializer_list<int64_t> dims,
              const T* values) {
    if (!on()) return;
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    Pending& p = Add(prefix, name, dims);
    p.values.assign(values, values + n);
  }
  void RecordValues(const std::string& prefix, const char* name,
                    std::initializer_list<int64_t> dims, std::vector<int64_t> values);
  // A tensor of `dims` whose every element is `value` (one value for {} dims).
  void RecordFill(const std::string& prefix, const char* name, std::initializer_list<int64_t> dims,
                  int64_t value);

  // Hands every tensor opened or recorded since the last Flush to the sink, in that order.
  void Flush();

  // Tensors the arithmetic itself does not keep, recomputed here by their plain definitions:

  // ids, positions, the embedding rows with their scales, and the causal mask over the call's
  // slots (token t sees the slots up to its own position, SPEC §5.3).
  void RecordInputs(const ModelWeights& w, const int32_t* ids, const int64_t* pos, int64_t tokens);
  // One query row's attn.scores (q8 . k8 for every slot of the call) and attn.exp (DiExp of
  // score - max over the visible slots, with DetLLM's dummy x = 0 at masked slots).
  static void ScoresAndExps(const int8_t* q8, const KvHeadView& kv, int64_t visible, int64_t slots,
                            int64_t tpos, int64_t* scores, int64_t* exps);
  // The sigmoid's DI-Exp values of one gate row: DiExp(-|g[i]|, tpos).
  static void SigmoidExps(const int32_t* g, int64_t n, int64_t tpos, int64_t* out);

 private:
  struct Pending {
    std::string name;
    std::vector<int64_t> dims, values;
  };
  Pending& Add(const std::string& prefix, const char* name, std::initializer_list<int64_t> dims);

  TraceSink* sink_;
  // Owned one by one, so that Open's handles stay valid as more are added; empty (and never
  // allocated) when tracing is off.
  std::vector<std::unique_ptr<Pending>> pending_;
};

}  // namespace dv
