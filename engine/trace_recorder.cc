#include "engine/trace_recorder.h"

#include "engine/ops/di_exp.h"

namespace dv {

std::string TraceRecorder::Prefix(int64_t layer, const char* block) const {
  return on() ? "layer" + std::to_string(layer) + block : std::string();
}

TraceRecorder::Pending& TraceRecorder::Add(const std::string& prefix, const char* name,
                                           std::initializer_list<int64_t> dims) {
  Pending& p = *pending_.emplace_back(std::make_unique<Pending>());
  p.name = prefix + name;
  p.dims.assign(dims.begin(), dims.end());
  return p;
}

TraceTensor TraceRecorder::Open(const std::string& prefix, const char* name,
                                std::initializer_list<int64_t> dims) {
  if (!on()) return TraceTensor();
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  Pending& p = Add(prefix, name, dims);
  p.values.assign(static_cast<size_t>(n), 0);
  return TraceTensor(&p.values);
}

void TraceRecorder::RecordValues(const std::string& prefix, const char* name,
                                 std::initializer_list<int64_t> dims, std::vector<int64_t> values) {
  if (!on()) return;
  Add(prefix, name, dims).values = std::move(values);
}

void TraceRecorder::RecordFill(const std::string& prefix, const char* name,
                               std::initializer_list<int64_t> dims, int64_t value) {
  if (!on()) return;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  Add(prefix, name, dims).values.assign(static_cast<size_t>(n), value);
}

void TraceRecorder::Flush() {
  if (!on()) return;
  for (const auto& p : pending_) sink_->Record(p->name, p->dims, p->values);
  pending_.clear();
}

void TraceRecorder::RecordInputs(const ModelWeights& w, const int32_t* ids, const int64_t* pos,
                                 int64_t tokens) {
  if (!on()) return;
  const int64_t hidden = w.config.hidden;
  std::vector<int64_t> e8, em, ek;
  for (int64_t t = 0; t < tokens; ++t) {
    const auto id = static_cast<size_t>(ids[t]);
    const int8_t* row = w.embed_e8 + static_cast<int64_t>(id) * hidden;
    e8.insert(e8.end(), row, row + hidden);
    em.push_back(w.embed_m[id]);
    ek.push_back(w.embed_k[id]);
  }
  const int64_t slots = pos[tokens - 1] + 1;
  std::vector<int64_t> mask(static_cast<size_t>(tokens * slots));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t s = 0; s < slots; ++s)
      mask[static_cast<size_t>(t * slots + s)] = s <= pos[t] ? 1 : 0;
  }
  Record("", "ids", {tokens}, ids);
  Record("", "positions", {tokens}, pos);
  RecordValues("", "embed.e8", {tokens, hidden}, std::move(e8));
  RecordValues("", "embed.m", {tokens}, std::move(em));
  RecordValues("", "embed.k", {tokens}, std::move(ek));
  RecordValues("", "mask", {tokens, slots}, std::move(mask));
}

void TraceRecorder::ScoresAndExps(const int8_t* q8, const KvHeadView& kv, int64_t visible,
                                  int64_t slots, int64_t tpos, int64_t* scores, int64_t* exps) {
  const int64_t d4 = KvPaddedDim(kv.head_dim);
  for (int64_t s = 0; s < slots; ++s) {
    int64_t acc = 0;
    for (int64_t j = 0; j < kv.head_dim; ++j) acc += q8[j] * kv.k[KvKOffset(s, j, d4)];
    scores[s] = acc;
  }
  const int64_t row_max = *std::max_element(scores, scores + visible);
  for (int64_t s = 0; s < slots; ++s) {
    exps[s] = DiExp(s < visible ? scores[s] - row_max : 0, tpos);
  }
}

void TraceRecorder::SigmoidExps(const int32_t* g, int64_t n, int64_t tpos, int64_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = DiExp(WrapNeg(WrapAbs(g[i])), tpos);
}

}  // namespace dv
