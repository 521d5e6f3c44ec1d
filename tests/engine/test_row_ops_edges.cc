// Every backend's row operations at the int64 edges, against DetLLM's own functions
// (tests/data/detllm_edges/edges.json; its README says how the values were made). Every
// execution path -- each backend of AvailableBackends() and the cpu backend at each ISA level
// this machine has -- must give DetLLM's values at each shift site driven past 63 and each site
// driven past int64: the residual add aligned by -100..1000 (the shift that decides tiny-w2b),
// DI-Exp's 1 << k with k >= 64 and its q far past 62 inside attention, the static K/V
// requantization shifted past 63 either way, W1/W2 quantization rows, wrapped column products.
// A new backend (cuda included) passes this before any model test (docs/adding-a-backend.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "engine/backends/row_ops.h"
#include "tests/engine/test_support.h"
#include "tests/support/detllm_edges.h"

namespace dv {
namespace {

using test_edges::Cases;
using test_edges::I;
using test_edges::Row;
using test_edges::Rows;
using test_edges::Where;

class RowOpsEdges : public ::testing::Test {
 protected:
  // Runs check(ops, path name) for every execution path.
  template <typename F>
  void OnEveryPath(F check) {
    for (const auto& [name, backend] : test::EveryExecutionPath()) check(backend->row_ops(), name);
  }
};

TEST_F(RowOpsEdges, ResidualAddWithEveryAlignmentShift) {
  const auto cases = Cases("residual_add");
  OnEveryPath([&](const RowOps& ops, const std::string& path) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& in = cases[i]["in"];
      auto h = Row<int32_t>(in["h"]);
      const auto d = Row<int32_t>(in["d"]);
      const int64_t k = ops.AddResidual(h.data(), static_cast<int64_t>(h.size()), I(in, "k_res"),
                                        d.data(), I(in, "dm"), I(in, "dk"));
      EXPECT_EQ(h, Row<int32_t>(cases[i]["out"]["h"])) << path << ": " << Where(cases[i], i);
      EXPECT_EQ(k, I(cases[i]["out"], "k")) << path << ": " << Where(cases[i], i);
    }
  });
}

// The K/V cache of one head in the decode layout (row_ops.h), from [S][d] rows.
struct PackedHead {
  PackedHead(const std::vector<int8_t>& k8, const std::vector<int8_t>& v8, int64_t slots, int64_t d)
      : k(static_cast<size_t>(KvPaddedSlots(slots) * KvPaddedDim(d))), v(k.size()) {
    const int64_t d4 = KvPaddedDim(d);
    for (int64_t s = 0; s < slots; ++s) {
      for (int64_t j = 0; j < d; ++j) {
        k[static_cast<size_t>(KvKOffset(s, j, d4))] = k8[static_cast<size_t>(s * d + j)];
        v[static_cast<size_t>(KvVOffset(s, j, d4))] = v8[static_cast<size_t>(s * d + j)];
      }
    }
  }
  std::vector<int8_t> k, v;
};

TEST_F(RowOpsEdges, AttentionWithDiExpShiftsPast63) {
  const auto cases = Cases("attend");
  OnEveryPath([&](const RowOps& ops, const std::string& path) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& in = cases[i]["in"];
      const auto& out = cases[i]["out"];
      const auto q8 = Row<int8_t>(in["q8"]);
      const auto d = static_cast<int64_t>(q8.size());
      const auto slots = static_cast<int64_t>(Row(out["scores"]).size());
      const PackedHead head(Rows<int8_t>(in["k8"], q8.size()), Rows<int8_t>(in["v8"], q8.size()),
                            slots, d);
      const KvHeadView view{head.k.data(), head.v.data(), d};
      const Dyadic scale{I(in, "m"), I(in, "k")};
      // One query alone, then the same query twice as a group sharing the KV head.
      std::vector<int32_t> scores(2 * static_cast<size_t>(slots)), probs(scores.size());
      std::vector<int64_t> exps(scores.size()), ctx(2 * static_cast<size_t>(d));
      const int64_t tpos = ops.Attend(q8.data(), view, slots, scale, scores.data(), exps.data(),
                                      probs.data(), ctx.data());
      EXPECT_EQ(tpos, I(out, "tpos")) << path << ": " << Where(cases[i], i);
      EXPECT_EQ(std::vector<int32_t>(probs.begin(), probs.begin() + slots), Row<int32_t>(out["p"]))
          << path << ": " << Where(cases[i], i);
      EXPECT_EQ(std::vector<int64_t>(ctx.begin(), ctx.begin() + d), Row(out["ctx"]))
          << path << ": " << Where(cases[i], i);
      std::vector<int8_t> pair(q8);
      pair.insert(pair.end(), q8.begin(), q8.end());
      const Dyadic scales[2] = {scale, scale};
      int64_t tpos2[2] = {0, 0};
      ops.AttendGroup(2, pair.data(), view, slots, scales, slots, scores.data(), exps.data(),
                      probs.data(), ctx.data(), tpos2);
      for (int64_t q = 0; q < 2; ++q) {
        EXPECT_EQ(tpos2[q], I(out, "tpos")) << path << ": group query " << q;
        EXPECT_EQ(std::vector<int32_t>(probs.begin() + q * slots, probs.begin() + (q + 1) * slots),
                  Row<int32_t>(out["p"]))
            << path << ": group query " << q << ", " << Where(cases[i], i);
        EXPECT_EQ(std::vector<int64_t>(ctx.begin() + q * d, ctx.begin() + (q + 1) * d),
                  Row(out["ctx"]))
            << path << ": group query " << q << ", " << Where(cases[i], i);
      }
    }
  });
}

TEST_F(RowOpsEdges, StaticRequantizationShiftedPast63) {
  const auto cases = Cases("requant_i8_static");
  OnEveryPath([&](const RowOps& ops, const std::string& path) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& in = cases[i]["in"];
      const auto p = Row(in["p"]);
      const auto cm = Row(in["col_m"]);
      const auto want = Row<int8_t>(cases[i]["out"]["y8"]);
      const auto n = static_cast<int64_t>(p.size());
      std::vector<int8_t> y8(p.size());
      // The K cache form: per-channel target scales, unit column scale.
      const bool unit_columns = std::all_of(cm.begin(), cm.end(), [](int64_t m) { return m == 1; });
      if (I(in, "col_k") == 0 && unit_columns) {
        const std::vector<int64_t> s_m(p.size(), I(in, "s_m")), s_k(p.size(), I(in, "s_k"));
        ops.RequantI8StaticColumns(p.data(), n, I(in, "row_m"), I(in, "row_k"), s_m.data(),
                                   s_k.data(), y8.data());
        EXPECT_EQ(y8, want) << path << ": K form, " << Where(cases[i], i);
      }
      // The V cache form: int32 GEMM outputs at one target scale.
      bool fits = true;
      for (int64_t x : p) fits = fits && x >= INT32_MIN && x <= INT32_MAX;
      if (fits) {
        const std::vector<int32_t> p32(p.begin(), p.end());
        ops.RequantI8StaticRow(p32.data(), n, I(in, "row_m"), I(in, "row_k"), cm.data(),
                               I(in, "col_k"), I(in, "s_m"), I(in, "s_k"), y8.data());
        EXPECT_EQ(y8, want) << path << ": V form, " << Where(cases[i], i);
      }
    }
  });
}

TEST_F(RowOpsEdges, QuantizationAndRequantizationRows) {
  const auto quant = Cases("quant_i8_pertoken");
  const auto common = Cases("requant_i32_common");
  const auto rowcol = Cases("requant_i8_rowcol");
  OnEveryPath([&](const RowOps& ops, const std::string& path) {
    for (size_t i = 0; i < quant.size(); ++i) {
      const auto& in = quant[i]["in"];
      const auto x = Row(in["x"]);
      std::vector<int8_t> x8(x.size());
      WrapCounter wraps;
      const Dyadic r = ops.QuantI8(x.data(), static_cast<int64_t>(x.size()), I(in, "m"), I(in, "k"),
                                   x8.data(), &wraps);
      EXPECT_EQ(x8, Row<int8_t>(quant[i]["out"]["x8"])) << path << ": " << Where(quant[i], i);
      EXPECT_EQ(r.m, I(quant[i]["out"], "m")) << path << ": " << Where(quant[i], i);
      EXPECT_EQ(r.k, I(quant[i]["out"], "k")) << path << ": " << Where(quant[i], i);
    }
    for (size_t i = 0; i < common.size(); ++i) {
      const auto& in = common[i]["in"];
      auto p = Row<int32_t>(in["p"]);
      const auto cm = Row(in["col_m"]);
      // In place, as the model calls it for gate and up.
      const int64_t sh = ops.RequantI32(p.data(), cm.data(), static_cast<int64_t>(p.size()),
                                        I(in, "target_bits"), p.data());
      EXPECT_EQ(p, Row<int32_t>(common[i]["out"]["y"])) << path << ": " << Where(common[i], i);
      EXPECT_EQ(sh, I(common[i]["out"], "sh")) << path << ": " << Where(common[i], i);
    }
    for (size_t i = 0; i < rowcol.size(); ++i) {
      const auto& in = rowcol[i]["in"];
      const auto p = Row(in["p"]);
      const auto cm = Row(in["col_m"]);
      std::vector<int64_t> s(p.size());
      std::vector<int8_t> y8(p.size());
      WrapCounter wraps;
      const Dyadic r = ops.RequantI8RowColumn(p.data(), cm.data(), static_cast<int64_t>(p.size()),
                                              I(in, "row_m"), I(in, "row_k"), I(in, "col_k"),
                                              s.data(), y8.data(), &wraps);
      EXPECT_EQ(y8, Row<int8_t>(rowcol[i]["out"]["y8"])) << path << ": " << Where(rowcol[i], i);
      EXPECT_EQ(r.m, I(rowcol[i]["out"], "m")) << path << ": " << Where(rowcol[i], i);
      EXPECT_EQ(r.k, I(rowcol[i]["out"], "k")) << path << ": " << Where(rowcol[i], i);
    }
  });
}

TEST_F(RowOpsEdges, SwigluAndRmsNorm) {
  const auto swiglu = Cases("di_swiglu");
  const auto norm = Cases("di_rmsnorm");
  OnEveryPath([&](const RowOps& ops, const std::string& path) {
    for (size_t i = 0; i < swiglu.size(); ++i) {
      const auto& in = swiglu[i]["in"];
      const auto g = Row<int32_t>(in["gate"]), u = Row<int32_t>(in["up"]);
      std::vector<int64_t> y(g.size());
      ops.Swiglu(g.data(), u.data(), static_cast<int64_t>(g.size()), I(swiglu[i]["out"], "tpos"),
                 y.data());
      EXPECT_EQ(y, Row(swiglu[i]["out"]["y"])) << path << ": " << Where(swiglu[i], i);
    }
    for (size_t i = 0; i < norm.size(); ++i) {
      const auto x = Row<int32_t>(norm[i]["in"]["x"]);
      std::vector<int32_t> y(x.size());
      ops.RmsNorm(x.data(), static_cast<int64_t>(x.size()), y.data());
      EXPECT_EQ(y, Row<int32_t>(norm[i]["out"]["y"])) << path << ": " << Where(norm[i], i);
    }
  });
}

}  // namespace
}  // namespace dv
