// The integer core at the int64 edges, against DetLLM's own functions (intmath.py, dyadic.py and
// ops/ of its Python reference, run with PyPI torch on the CPU; tests/data/detllm_edges/README.md
// says how the values were made): every site of docs/SPEC.md's overflow table that can wrap or
// shift by 64 or more in principle, driven there with crafted inputs. Shift counts of 64 and
// more (and negative ones) in both directions, rshift_round at k = 64, 65 and beyond,
// FitDyadicRatio and NormScale on wrapped values, W1 and W2 quantization rows, wrapped column
// products, the static K/V requantization with shifts past 63 either way, residual adds aligned
// by -100..1000, DI-Exp with 1 << k past 63 and with negative wrapped scales, softmax sums past
// int64, the sigmoid at tpos = 1. test_core_ubsan runs the same cases under UBSan.
#include <gtest/gtest.h>

#include <vector>

#include "engine/dyadic.h"
#include "engine/intmath.h"
#include "engine/ops/di_exp.h"
#include "engine/ops/di_rmsnorm.h"
#include "engine/ops/di_softmax.h"
#include "engine/ops/di_swiglu.h"
#include "tests/core/suite_name.h"
#include "tests/support/detllm_edges.h"

namespace dv {
namespace {

using test_edges::Cases;
using test_edges::I;
using test_edges::Row;
using test_edges::Where;

TEST(DV_CORE_SUITE(DetllmEdges), TorchShiftsSaturateAtEveryCount) {
  const auto left = Cases("lshift"), right = Cases("ashr"), round = Cases("rshift_round");
  for (size_t i = 0; i < left.size(); ++i) {
    const auto& in = left[i]["in"];
    EXPECT_EQ(ShiftLeftWrap(I(in, "a"), I(in, "k")), I(left[i]["out"], "y")) << Where(left[i], i);
  }
  for (size_t i = 0; i < right.size(); ++i) {
    const auto& in = right[i]["in"];
    EXPECT_EQ(ShiftRightArith(I(in, "a"), I(in, "k")), I(right[i]["out"], "y"))
        << Where(right[i], i);
  }
  for (size_t i = 0; i < round.size(); ++i) {
    const auto& in = round[i]["in"];
    EXPECT_EQ(RoundingShiftRight(I(in, "a"), I(in, "k")), I(round[i]["out"], "y"))
        << Where(round[i], i);
  }
}

TEST(DV_CORE_SUITE(DetllmEdges), FitDyadicRatioOnWrappedNumerators) {
  const auto cases = Cases("fit_dyadic_ratio");
  for (size_t i = 0; i < cases.size(); ++i) {
    const Dyadic r = FitDyadicRatio(I(cases[i]["in"], "num"), I(cases[i]["in"], "den"));
    EXPECT_EQ(r.m, I(cases[i]["out"], "m")) << Where(cases[i], i);
    EXPECT_EQ(r.k, I(cases[i]["out"], "e")) << Where(cases[i], i);
  }
}

TEST(DV_CORE_SUITE(DetllmEdges), NormScaleOnWrappedMantissas) {
  const auto cases = Cases("norm_scale");
  for (size_t i = 0; i < cases.size(); ++i) {
    const Dyadic r = NormScale(I(cases[i]["in"], "m"), I(cases[i]["in"], "k"));
    EXPECT_EQ(r.m, I(cases[i]["out"], "m")) << Where(cases[i], i);
    EXPECT_EQ(r.k, I(cases[i]["out"], "k")) << Where(cases[i], i);
  }
}

TEST(DV_CORE_SUITE(DetllmEdges), QuantizationRowsW1W2AndWrappedInputs) {
  const auto cases = Cases("quant_i8_pertoken");
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& in = cases[i]["in"];
    const auto x = Row(in["x"]);
    std::vector<int8_t> x8(x.size());
    const Dyadic r = QuantI8PerToken(x.data(), static_cast<int64_t>(x.size()), I(in, "m"),
                                     I(in, "k"), x8.data());
    EXPECT_EQ(x8, Row<int8_t>(cases[i]["out"]["x8"])) << Where(cases[i], i);
    EXPECT_EQ(r.m, I(cases[i]["out"], "m")) << Where(cases[i], i);
    EXPECT_EQ(r.k, I(cases[i]["out"], "k")) << Where(cases[i], i);
  }
}

TEST(DV_CORE_SUITE(DetllmEdges), RequantizationWithWrappedProducts) {
  const auto common = Cases("requant_i32_common");
  for (size_t i = 0; i < common.size(); ++i) {
    const auto& in = common[i]["in"];
    const auto p = Row<int32_t>(in["p"]);
    const auto cm = Row(in["col_m"]);
    std::vector<int32_t> y(p.size());
    const int64_t sh = RequantI32Common(p.data(), cm.data(), static_cast<int64_t>(p.size()),
                                        I(in, "target_bits"), y.data());
    EXPECT_EQ(y, Row<int32_t>(common[i]["out"]["y"])) << Where(common[i], i);
    EXPECT_EQ(sh, I(common[i]["out"], "sh")) << Where(common[i], i);
  }
  const auto rowcol = Cases("requant_i8_rowcol");
  for (size_t i = 0; i < rowcol.size(); ++i) {
    const auto& in = rowcol[i]["in"];
    const auto p = Row(in["p"]);
    const auto cm = Row(in["col_m"]);
    std::vector<int64_t> s(p.size());
    std::vector<int8_t> y8(p.size());
    const Dyadic r =
        RequantI8RowCol(p.data(), cm.data(), static_cast<int64_t>(p.size()), I(in, "row_m"),
                        I(in, "row_k"), I(in, "col_k"), s.data(), y8.data());
    EXPECT_EQ(y8, Row<int8_t>(rowcol[i]["out"]["y8"])) << Where(rowcol[i], i);
    EXPECT_EQ(r.m, I(rowcol[i]["out"], "m")) << Where(rowcol[i], i);
    EXPECT_EQ(r.k, I(rowcol[i]["out"], "k")) << Where(rowcol[i], i);
  }
  const auto stat = Cases("requant_i8_static");
  for (size_t i = 0; i < stat.size(); ++i) {
    const auto& in = stat[i]["in"];
    const auto p = Row(in["p"]);
    const auto cm = Row(in["col_m"]);
    std::vector<int8_t> y8(p.size());
    for (size_t j = 0; j < p.size(); ++j) {
      y8[j] = RequantI8Static(p[j], I(in, "row_m"), I(in, "row_k"), cm[j], I(in, "col_k"),
                              I(in, "s_m"), I(in, "s_k"));
    }
    EXPECT_EQ(y8, Row<int8_t>(stat[i]["out"]["y8"])) << Where(stat[i], i);
  }
}

TEST(DV_CORE_SUITE(DetllmEdges), ResidualStreamWithShiftsPast63) {
  const auto renorm = Cases("residual_renorm");
  for (size_t i = 0; i < renorm.size(); ++i) {
    const auto& in = renorm[i]["in"];
    const auto h64 = Row(in["h64"]);
    std::vector<int32_t> h(h64.size());
    const int64_t k = ResidualRenormWith([&](int64_t j) { return h64[static_cast<size_t>(j)]; },
                                         static_cast<int64_t>(h64.size()), I(in, "k"), h.data());
    EXPECT_EQ(h, Row<int32_t>(renorm[i]["out"]["h"])) << Where(renorm[i], i);
    EXPECT_EQ(k, I(renorm[i]["out"], "k")) << Where(renorm[i], i);
  }
  const auto from = Cases("residual_from_delta");
  for (size_t i = 0; i < from.size(); ++i) {
    const auto& in = from[i]["in"];
    const auto d = Row<int32_t>(in["d"]);
    std::vector<int32_t> h(d.size());
    const int64_t k = ResidualFromDelta(d.data(), static_cast<int64_t>(d.size()), I(in, "dm"),
                                        I(in, "dk"), h.data());
    EXPECT_EQ(h, Row<int32_t>(from[i]["out"]["h"])) << Where(from[i], i);
    EXPECT_EQ(k, I(from[i]["out"], "k")) << Where(from[i], i);
  }
  const auto add = Cases("residual_add");
  for (size_t i = 0; i < add.size(); ++i) {
    const auto& in = add[i]["in"];
    auto h = Row<int32_t>(in["h"]);
    const auto d = Row<int32_t>(in["d"]);
    const int64_t k = ResidualAdd(h.data(), static_cast<int64_t>(h.size()), I(in, "k_res"),
                                  d.data(), I(in, "dm"), I(in, "dk"));
    EXPECT_EQ(h, Row<int32_t>(add[i]["out"]["h"])) << Where(add[i], i);
    EXPECT_EQ(k, I(add[i]["out"], "k")) << Where(add[i], i);
  }
}

TEST(DV_CORE_SUITE(DetllmEdges), DiExpPast63AndWrappedScales) {
  const auto cases = Cases("di_exp");
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& in = cases[i]["in"];
    const int64_t tpos = DiExpTpos(I(in, "m"), I(in, "k"));
    EXPECT_EQ(tpos, I(cases[i]["out"], "tpos")) << Where(cases[i], i);
    const auto x = Row(in["x"]);
    std::vector<int64_t> e;
    for (int64_t v : x) e.push_back(DiExp(v, tpos));
    EXPECT_EQ(e, Row(cases[i]["out"]["e"])) << Where(cases[i], i);
  }
}

TEST(DV_CORE_SUITE(DetllmEdges), SoftmaxAtTposOneAndPastInt64) {
  const auto cases = Cases("di_softmax");
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& in = cases[i]["in"];
    const auto scores = Row<int32_t>(in["scores"]);
    std::vector<int64_t> exps(scores.size());
    std::vector<int32_t> p(scores.size());
    const int64_t tpos = DiSoftmax(scores.data(), nullptr, static_cast<int64_t>(scores.size()),
                                   I(in, "m"), I(in, "k"), exps.data(), p.data());
    EXPECT_EQ(tpos, I(cases[i]["out"], "tpos")) << Where(cases[i], i);
    EXPECT_EQ(p, Row<int32_t>(cases[i]["out"]["p"])) << Where(cases[i], i);
  }
}

TEST(DV_CORE_SUITE(DetllmEdges), SwigluAtTposOne) {
  const auto cases = Cases("di_swiglu");
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& in = cases[i]["in"];
    const auto g = Row<int32_t>(in["gate"]), u = Row<int32_t>(in["up"]);
    const int64_t tpos = DiExpTpos(I(in, "gm"), I(in, "gk"));
    EXPECT_EQ(tpos, I(cases[i]["out"], "tpos")) << Where(cases[i], i);
    std::vector<int64_t> y(g.size());
    DiSwiglu(g.data(), u.data(), static_cast<int64_t>(g.size()), tpos, y.data());
    EXPECT_EQ(y, Row(cases[i]["out"]["y"])) << Where(cases[i], i);
  }
}

TEST(DV_CORE_SUITE(DetllmEdges), RmsNormOfInt32Extremes) {
  const auto cases = Cases("di_rmsnorm");
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto x = Row<int32_t>(cases[i]["in"]["x"]);
    std::vector<int32_t> y(x.size());
    DiRmsNorm(x.data(), static_cast<int64_t>(x.size()), y.data());
    EXPECT_EQ(y, Row<int32_t>(cases[i]["out"]["y"])) << Where(cases[i], i);
  }
}

}  // namespace
}  // namespace dv
