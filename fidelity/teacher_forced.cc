#include "fidelity/teacher_forced.h"

#include <algorithm>

#include "base/check.h"

namespace dv {

void IntTeacherForced(
    IntQwen3& model, std::span<const int32_t> ids, int64_t chunk,
    const std::function<void(int64_t, std::span<const int32_t>, int64_t, int64_t)>& each) {
  const int64_t T = static_cast<int64_t>(ids.size()), V = model.config().vocab;
  if (T == 0) return;
  chunk = std::max<int64_t>(1, std::min(chunk, T));
  KvCache cache(model.config(), T, model.backend());
  std::vector<int32_t> logits(static_cast<size_t>(chunk * V));
  std::vector<int64_t> m(static_cast<size_t>(chunk)), k(static_cast<size_t>(chunk));
  for (int64_t t0 = 0; t0 < T; t0 += chunk) {
    const int64_t n = std::min(chunk, T - t0);
    ForwardRow row{&cache, ids.data() + t0, n, nullptr, logits.data(), m.data(), k.data()};
    model.Forward({&row, 1});
    for (int64_t i = 0; i < n; ++i) {
      each(t0 + i, {logits.data() + i * V, static_cast<size_t>(V)}, m[static_cast<size_t>(i)],
           k[static_cast<size_t>(i)]);
    }
  }
}

void FloatTeacherForced(FloatQwen3& model, std::span<const int32_t> ids, int64_t chunk,
                        const std::function<void(int64_t, std::span<const float>)>& each) {
  const int64_t T = static_cast<int64_t>(ids.size()), V = model.config().vocab;
  if (T == 0) return;
  chunk = std::max<int64_t>(1, std::min(chunk, T));
  FloatKvCache cache(model.config(), T);
  std::vector<float> logits(static_cast<size_t>(chunk * V));
  for (int64_t t0 = 0; t0 < T; t0 += chunk) {
    const int64_t n = std::min(chunk, T - t0);
    FloatForwardRow row{&cache, ids.data() + t0, n, nullptr, logits.data()};
    model.Forward({&row, 1});
    for (int64_t i = 0; i < n; ++i) each(t0 + i, {logits.data() + i * V, static_cast<size_t>(V)});
  }
}

FloatLogitsFn FloatEngineLogits(FloatQwen3& model, int64_t chunk) {
  return [&model, chunk](std::span<const int32_t> ids, std::vector<double>& out) {
    const int64_t V = model.config().vocab;
    out.assign(ids.size() * static_cast<size_t>(V), 0.0);
    FloatTeacherForced(model, ids, chunk, [&](int64_t pos, std::span<const float> logits) {
      std::copy(logits.begin(), logits.end(), out.begin() + pos * V);
    });
  };
}

CompareSummary CompareTeacherForced(IntQwen3& model, const FloatLogitsFn& float_logits,
                                    const std::vector<std::vector<int32_t>>& sequences,
                                    const FidelityProgress& progress, int64_t chunk) {
  const ModelWeights& w = model.weights();
  const int64_t V = model.config().vocab;
  int64_t total = 0, done = 0;
  for (const auto& s : sequences) total += static_cast<int64_t>(s.size());
  CompareAccumulator acc;
  std::vector<double> f;
  for (const auto& ids : sequences) {
    float_logits(ids, f);
    DV_CHECK(static_cast<int64_t>(f.size()) == static_cast<int64_t>(ids.size()) * V)
        << "the float model's vocabulary differs from the artifact's";
    IntTeacherForced(model, ids, chunk,
                     [&](int64_t pos, std::span<const int32_t> logits, int64_t m, int64_t k) {
                       acc.Add(std::span<const double>(f.data() + pos * V, static_cast<size_t>(V)),
                               logits, w.head_m, w.head_k, m, k);
                       if (progress) progress(++done, total);
                     });
  }
  return acc.summary();
}

namespace {

// Scores window by window; `run` feeds one window's ids and calls back each position's logits.
template <typename RunWindow>
PerplexitySummary Windows(std::span<const int32_t> ids, int64_t ctx, int64_t stride,
                          const FidelityProgress& progress, const RunWindow& run) {
  const auto windows = PerplexityWindows(static_cast<int64_t>(ids.size()), ctx, stride);
  PerplexityAccumulator acc;
  int64_t done = 0;
  for (const PerplexityWindow& win : windows) {
    const std::span<const int32_t> w =
        ids.subspan(static_cast<size_t>(win.begin), static_cast<size_t>(ctx));
    // Position p predicts token p + 1; targets first_target .. ctx - 1 are scored.
    run(w, [&](int64_t pos, std::span<const double> logits) {
      if (pos + 1 >= win.first_target && pos + 1 < ctx) {
        acc.Add(logits, w[static_cast<size_t>(pos + 1)]);
      }
    });
    acc.EndWindow();
    if (progress) progress(++done, static_cast<int64_t>(windows.size()));
  }
  return acc.summary();
}

}  // namespace

PerplexitySummary IntPerplexity(IntQwen3& model, std::span<const int32_t> ids, int64_t ctx,
                                int64_t stride, const FidelityProgress& progress, int64_t chunk) {
  const ModelWeights& w = model.weights();
  return Windows(ids, ctx, stride, progress, [&](std::span<const int32_t> win, const auto& each) {
    IntTeacherForced(
        model, win, chunk, [&](int64_t pos, std::span<const int32_t> logits, int64_t m, int64_t k) {
          const std::vector<double> real = DequantizeLogits(logits, w.head_m, w.head_k, m, k);
          each(pos, std::span<const double>(real));
        });
  });
}

PerplexitySummary FloatPerplexity(FloatQwen3& model, std::span<const int32_t> ids, int64_t ctx,
                                  int64_t stride, const FidelityProgress& progress, int64_t chunk) {
  return Windows(ids, ctx, stride, progress, [&](std::span<const int32_t> win, const auto& each) {
    FloatTeacherForced(model, win, chunk, [&](int64_t pos, std::span<const float> logits) {
      const std::vector<double> d(logits.begin(), logits.end());
      each(pos, std::span<const double>(d));
    });
  });
}

}  // namespace dv
