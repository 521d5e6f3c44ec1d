// The float64 reference data of tests/data/float (scripts/float_engine/make_float_reference.py:
// an independent numpy float64 forward of synthetic checkpoints) and the tolerances the float
// engine is held to.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/npy_reader.h"
#include "tests/support/scratch_files.h"

namespace dv::test {

// Relative tolerance per position: max_i |logit_i - ref_i| <= tol * max_i |ref_i|. fp32 measures
// 1.7e-6 .. 5.4e-6 against float64 (transformers' own fp32: 1.7e-6 .. 4.5e-6); bf16 measures
// 0.026 .. 0.046 (transformers' bf16: 0.054 .. 0.086), see tests/data/float/*.json; fp16 (binary16
// activations, 3 more mantissa bits than bf16) 0.00048 .. 0.0053 over the three presets.
inline constexpr double kFp32RelTol = 2e-5;
inline constexpr double kBf16RelTol = 0.1;
inline constexpr double kFp16RelTol = 0.015;

struct FloatReference {
  std::string name, preset;
  std::string format = "hf";  // what `synth --format` wrote: hf (a folder) or gguf (a file)
  uint64_t seed = 0;
  std::string model_sha256;
  std::vector<int32_t> prompt, continuation;
  int64_t positions = 0, vocab = 0;
  std::vector<double> norm_inf, margin;  // per position
  std::vector<double> logits;            // [positions, vocab] when stored in full
  nlohmann::json sample;                 // else: {"ids": [[...]], "values": [[...]]}

  std::vector<int32_t> Sequence() const {
    std::vector<int32_t> s = prompt;
    s.insert(s.end(), continuation.begin(), continuation.end());
    return s;
  }
};

inline std::string FloatDataDir() {
  const char* src = std::getenv("DETVERIFY_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/data/float";
}

inline FloatReference LoadFloatReference(const std::string& name) {
  const std::string dir = FloatDataDir();
  const auto j = nlohmann::json::parse(test_files::ReadFile(dir + "/" + name + ".json"));
  FloatReference r;
  r.name = name;
  r.preset = j.at("preset");
  r.seed = j.at("seed");
  r.format = j.value("format", "hf");
  r.model_sha256 = j.at("model_sha256");
  r.prompt = j.at("prompt").get<std::vector<int32_t>>();
  r.continuation = j.at("continuation").get<std::vector<int32_t>>();
  r.positions = j.at("positions");
  r.vocab = j.at("vocab");
  r.norm_inf = j.at("float64").at("ref_norm_inf").get<std::vector<double>>();
  r.margin = j.at("float64").at("top2_margin").get<std::vector<double>>();
  if (j.contains("logits_file")) {
    const auto a = test_files::ReadNpy(dir + "/" + j.at("logits_file").get<std::string>());
    EXPECT_EQ(a.shape, (std::vector<int64_t>{r.positions, r.vocab}));
    r.logits = a.ToFloat64();
  } else {
    r.sample = j.at("sample");
  }
  return r;
}

inline int64_t Argmax(const float* v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return best;
}

// Checks one position's logits against the reference: the relative error within `tol`, and the
// same argmax wherever the reference's top-1/top-2 margin exceeds 2 * tol * max|ref| (then no
// perturbation within the tolerance can swap them). Prints the first mismatches.
inline void ExpectPositionMatches(const FloatReference& ref, int64_t pos, const float* logits,
                                  double tol, const std::string& what) {
  const double norm = ref.norm_inf[static_cast<size_t>(pos)];
  const double allowed = tol * norm;
  int shown = 0;
  double worst = 0.0;
  auto check = [&](int64_t id, double want) {
    const double err = std::abs(static_cast<double>(logits[id]) - want);
    worst = std::max(worst, err);
    if (err > allowed && shown++ < 5) {
      ADD_FAILURE() << what << " position " << pos << " id " << id << ": expected " << want
                    << ", got " << logits[id] << " (|diff| " << err << " > " << allowed << ")";
    }
  };
  if (!ref.logits.empty()) {
    const double* r = ref.logits.data() + pos * ref.vocab;
    for (int64_t i = 0; i < ref.vocab; ++i) check(i, r[i]);
  } else {
    const auto& ids = ref.sample.at("ids")[static_cast<size_t>(pos)];
    const auto& vals = ref.sample.at("values")[static_cast<size_t>(pos)];
    for (size_t i = 0; i < ids.size(); ++i) check(ids[i].get<int64_t>(), vals[i].get<double>());
  }
  EXPECT_LE(worst, allowed) << what << " position " << pos << ": relative error " << worst / norm
                            << " > " << tol;
  if (ref.margin[static_cast<size_t>(pos)] > 2 * allowed) {
    // The reference's argmax: the largest stored value.
    int64_t want = 0;
    if (!ref.logits.empty()) {
      const double* r = ref.logits.data() + pos * ref.vocab;
      for (int64_t i = 1; i < ref.vocab; ++i) want = r[i] > r[want] ? i : want;
    } else {
      const auto& ids = ref.sample.at("ids")[static_cast<size_t>(pos)];
      const auto& vals = ref.sample.at("values")[static_cast<size_t>(pos)];
      size_t best = 0;
      for (size_t i = 1; i < ids.size(); ++i) best = vals[i] > vals[best] ? i : best;
      want = ids[best].get<int64_t>();
    }
    EXPECT_EQ(Argmax(logits, ref.vocab), want) << what << " position " << pos << " (margin "
                                               << ref.margin[static_cast<size_t>(pos)] << ")";
  }
}

}  // namespace dv::test
