// Comparing the engine's recorded intermediates with a DetLLM trace (trace.safetensors of a
// fixture, whose tensor names, layouts and order of operations tests/data/detllm/tiny-a/TRACE.md
// describes). Shared by the trace tests and the shift-rule test.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/artifact.h"
#include "engine/model.h"
#include "engine/safetensors.h"

namespace dv::test {

struct Recorded {
  std::string name;
  std::vector<int64_t> dims, values;
};

// Keeps every tensor of a forward call, in recording order.
class RecordingSink : public TraceSink {
 public:
  void Record(const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& values) override {
    tensors.push_back({name, dims, values});
  }
  std::vector<Recorded> tensors;
};

// The engine records per-head tensors token-major ([T, heads, x]); DetLLM keeps these head-major
// ([B, heads, T, x]) from RoPE on.
inline bool HeadMajorInTrace(const std::string& name) {
  static const std::set<std::string> kHeadMajor = {
      "q_rope", "q_smooth", "q8",     "qm", "qk", "k_rope", "k8",       "v8",
      "scores", "sm_raw",   "sk_raw", "sm", "sk", "exp",    "exp_tpos", "probs"};
  return kHeadMajor.count(name.substr(name.rfind('.') + 1)) > 0;
}

// A trace tensor in the engine's layout.
inline std::vector<int64_t> InEngineLayout(const TensorView& ref) {
  std::vector<int64_t> v = DecodeIntTensor(ref);
  if (!HeadMajorInTrace(ref.name)) return v;
  // [1, heads, T, x] -> [T, heads, x]
  const int64_t heads = ref.shape[1], t_len = ref.shape[2];
  const int64_t x = ref.shape.size() > 3 ? ref.shape[3] : 1;
  std::vector<int64_t> out(v.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t i = 0; i < x; ++i) {
        out[static_cast<size_t>((t * heads + h) * x + i)] =
            v[static_cast<size_t>((h * t_len + t) * x + i)];
      }
    }
  }
  return out;
}

// The K and V cache slots [0, slots) of every (layer, KV head), in the trace's
// attn.k8_cache / attn.v8_cache layout [1, KV, S, d].
inline std::vector<int64_t> CacheInTraceLayout(const KvCache& cache, const ModelConfig& c,
                                               int64_t layer, int64_t slots, bool values) {
  const int64_t d = c.head_dim, d4 = KvPaddedDim(d);
  std::vector<int64_t> out;
  for (int64_t g = 0; g < c.n_kv_heads; ++g) {
    const KvHeadView view = cache.view(layer, g);
    for (int64_t s = 0; s < slots; ++s) {
      for (int64_t j = 0; j < d; ++j) {
        out.push_back(values ? view.v[KvVOffset(s, j, d4)] : view.k[KvKOffset(s, j, d4)]);
      }
    }
  }
  return out;
}

// Compares one phase ("prefill" or "decode") of a trace with what the engine recorded and with
// the engine state the trace also holds (derived constants, the caches a decode call reads).
// Every trace tensor of the phase must be compared; returns the names compared. The first
// departure in recording order fails with its name and flat index.
inline std::set<std::string> ExpectPhaseMatches(const std::map<std::string, TensorView>& trace,
                                                const std::string& phase, const RecordingSink& sink,
                                                const KvCache& cache, const ModelWeights& w,
                                                const std::string& what) {
  std::set<std::string> compared, attempted;
  auto expect_equal = [&](const std::string& name, const std::vector<int64_t>& got) {
    attempted.insert(name);
    auto it = trace.find(name);
    if (it == trace.end()) {
      ADD_FAILURE() << what << ": the trace has no tensor " << name;
      return;
    }
    const std::vector<int64_t> want = InEngineLayout(it->second);
    if (want.size() != got.size()) {
      ADD_FAILURE() << what << ": " << name << " has " << got.size() << " values, the trace "
                    << want.size();
      return;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      if (got[i] != want[i]) {
        ADD_FAILURE() << what << ": first departure at " << name << "[" << i << "]: " << got[i]
                      << ", DetLLM " << want[i];
        return;
      }
    }
    compared.insert(name);
  };
  for (const Recorded& r : sink.tensors) {
    const std::string name = phase + "." + r.name;
    // tiny-a's trace predates the down-input quantization's inner tensors (tiny-w2's README).
    const std::string leaf = r.name.substr(r.name.rfind('.') + 1);
    static const std::set<std::string> kLater = {"down_a", "down_mn", "down_kn", "down_am",
                                                 "down_wrap"};
    if (!trace.count(name) && kLater.count(leaf)) {
      continue;
    }
    expect_equal(name, r.values);
  }
  for (int64_t l = 0; l < w.config.n_layers; ++l) {
    const LayerWeights& L = w.layers[static_cast<size_t>(l)];
    const std::string c = "const.layer" + std::to_string(l) + ".";
    expect_equal(c + "attn_out_col_m", L.attn_out_col_m);
    expect_equal(c + "attn_out_col_k", {L.attn_out_col_k});
    expect_equal(c + "k_rowk", {L.k_rowk});
    const std::string at = phase + ".layer" + std::to_string(l) + ".attn.";
    if (trace.count(at + "k8_cache")) {
      const int64_t slots = trace.at(at + "k8_cache").shape[2];
      expect_equal(at + "k8_cache", CacheInTraceLayout(cache, w.config, l, slots, false));
      expect_equal(at + "v8_cache", CacheInTraceLayout(cache, w.config, l, slots, true));
    }
  }
  for (const auto& [name, view] : trace) {
    const bool ours = name.rfind(phase + ".", 0) == 0 || name.rfind("const.", 0) == 0;
    if (ours && !attempted.count(name)) ADD_FAILURE() << what << ": " << name << " not compared";
  }
  return compared;
}

}  // namespace dv::test
