// Checks of a RowOps implementation against the plain definitions, one operation at a time:
// random rows over every magnitude from 1 to 2^62, rows with 0, INT64_MIN and INT64_MAX entries,
// lengths around the vector widths, wrapped scales. Integer results admit no tolerance: whole
// outputs and returned scales must be equal. The cpu backend's row operations at each ISA level
// (tests/cpu_backend/row_ops_cpu_test.cc) and the device kernels' block programs on the host
// (tests/engine/test_block_row_ops.cc) run them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/backends/row_ops.h"
#include "engine/intmath.h"
#include "tests/cpu_backend/cpu_test_support.h"

namespace dv::test {

inline const std::vector<int64_t> kLengths = {1,  2,  3,  7,  8,   9,   15,  16,   17,
                                              31, 32, 33, 64, 127, 128, 129, 1024, 3072};

// A row of n int64 values of one random magnitude (or mixed ones), sometimes with edge values.
inline std::vector<int64_t> RandomRowI64(int64_t n, TestRng& rng, int64_t max_bits = 62) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  const int64_t bits = rng.Uniform(0, max_bits);
  const bool mixed = rng.Uniform(0, 3) == 0;
  for (auto& x : v) {
    const int64_t b = mixed ? rng.Uniform(0, max_bits) : bits;
    x = static_cast<int64_t>(rng.Next()) >> (63 - b);
  }
  switch (rng.Uniform(0, 9)) {
    case 0:
      v[static_cast<size_t>(rng.Uniform(0, n - 1))] = kInt64Min;
      break;
    case 1:
      v[static_cast<size_t>(rng.Uniform(0, n - 1))] = kInt64Max;
      break;
    case 2:
      for (auto& x : v) x = 0;
      break;
    case 3:
      v[0] = -(int64_t{1} << bits);
      break;
    default:
      break;
  }
  return v;
}

inline std::vector<int32_t> RandomRowI32(int64_t n, TestRng& rng) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  const int64_t bits = rng.Uniform(0, 31);
  for (auto& x : v) x = static_cast<int32_t>(static_cast<int64_t>(rng.Next()) >> (63 - bits));
  switch (rng.Uniform(0, 9)) {
    case 0:
      v[0] = INT32_MIN;
      break;
    case 1:
      v[static_cast<size_t>(n - 1)] = INT32_MAX;
      break;
    case 2:
      for (auto& x : v) x = 0;
      break;
    default:
      break;
  }
  return v;
}

inline std::vector<int64_t> RandomMantissas(int64_t n, TestRng& rng, int64_t lo, int64_t hi) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = rng.Uniform(lo, hi);
  if (rng.Uniform(0, 7) == 0) v[0] = kInt64Min;  // a wrapped scale
  return v;
}

// One KV head's cache in the decode layout, filled with random bytes (slots past the visible
// ones too: a prefill call's later tokens are already there and must not leak in).
struct RandomKv {
  RandomKv(int64_t head_dim, int64_t slots, TestRng& rng)
      : d4(KvPaddedDim(head_dim)),
        k(static_cast<size_t>(KvPaddedSlots(slots) * d4), 0),
        v(static_cast<size_t>(KvPaddedSlots(slots) * d4), 0) {
    for (int64_t s = 0; s < KvPaddedSlots(slots); ++s) {
      for (int64_t j = 0; j < head_dim; ++j) {
        k[static_cast<size_t>(KvKOffset(s, j, d4))] = static_cast<int8_t>(rng.Uniform(-128, 127));
        v[static_cast<size_t>(KvVOffset(s, j, d4))] = static_cast<int8_t>(rng.Uniform(-128, 127));
      }
    }
    view = {k.data(), v.data(), head_dim};
  }
  int64_t d4;
  std::vector<int8_t> k, v;
  KvHeadView view;
};

inline void CheckRmsNormAndGamma(const RowOps& plain, const RowOps& fast) {
  TestRng rng(21);
  for (int rep = 0; rep < 40; ++rep) {
    for (int64_t n : kLengths) {
      const auto x = RandomRowI32(n, rng);
      std::vector<int32_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      plain.RmsNorm(x.data(), n, want.data());
      fast.RmsNorm(x.data(), n, got.data());
      ASSERT_TRUE(SameBits(want, got)) << "RmsNorm n " << n;
      const auto gamma = RandomMantissas(n, rng, -(1 << 14), 1 << 14);
      std::vector<int64_t> want64(static_cast<size_t>(n)), got64(static_cast<size_t>(n));
      plain.RmsNormGamma(x.data(), n, gamma.data(), want64.data());
      fast.RmsNormGamma(x.data(), n, gamma.data(), got64.data());
      ASSERT_TRUE(SameBits(want64, got64)) << "RmsNormGamma n " << n;
    }
  }
}

inline void CheckQuantI8(const RowOps& plain, const RowOps& fast) {
  TestRng rng(22);
  for (int rep = 0; rep < 60; ++rep) {
    for (int64_t n : kLengths) {
      const auto x = RandomRowI64(n, rng);
      const int64_t m = rng.Uniform(0, 3) == 0 ? static_cast<int64_t>(rng.Next())
                                               : rng.Uniform(1, int64_t{1} << 40);
      const int64_t k = rng.Uniform(-80, 80);
      std::vector<int8_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      WrapCounter wa, wb;
      const Dyadic a = plain.QuantI8(x.data(), n, m, k, want.data(), &wa);
      const Dyadic b = fast.QuantI8(x.data(), n, m, k, got.data(), &wb);
      ASSERT_TRUE(SameBits(want, got)) << "n " << n;
      ASSERT_EQ(a.m, b.m);
      ASSERT_EQ(a.k, b.k);
      ASSERT_EQ(wa.events, wb.events);
    }
  }
}

inline void CheckRequantI32InPlaceAndNot(const RowOps& plain, const RowOps& fast) {
  TestRng rng(23);
  for (int rep = 0; rep < 40; ++rep) {
    for (int64_t n : kLengths) {
      const auto p = RandomRowI32(n, rng);
      const auto col = RandomMantissas(n, rng, 1, 1 << 16);
      for (int64_t tb : {14, 16, 20}) {
        std::vector<int32_t> want(static_cast<size_t>(n)), got = p;
        const int64_t sa = plain.RequantI32(p.data(), col.data(), n, tb, want.data());
        const int64_t sb = fast.RequantI32(got.data(), col.data(), n, tb, got.data());  // in place
        ASSERT_EQ(sa, sb);
        ASSERT_TRUE(SameBits(want, got)) << "n " << n << " tb " << tb;
      }
    }
  }
}

inline void CheckRequantI8RowColumn(const RowOps& plain, const RowOps& fast) {
  TestRng rng(24);
  for (int rep = 0; rep < 40; ++rep) {
    for (int64_t n : kLengths) {
      const auto p = RandomRowI64(n, rng, 40);
      const auto col = RandomMantissas(n, rng, 1, int64_t{1} << 26);
      const int64_t row_m = rng.Uniform(0, 4) == 0 ? static_cast<int64_t>(rng.Next()) : 1;
      const int64_t row_k = rng.Uniform(-30, 30), col_k = rng.Uniform(0, 40);
      std::vector<int64_t> sa(static_cast<size_t>(n)), sb(static_cast<size_t>(n));
      std::vector<int8_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      WrapCounter wa, wb;
      const Dyadic a = plain.RequantI8RowColumn(p.data(), col.data(), n, row_m, row_k, col_k,
                                                sa.data(), want.data(), &wa);
      const Dyadic b = fast.RequantI8RowColumn(p.data(), col.data(), n, row_m, row_k, col_k,
                                               sb.data(), got.data(), &wb);
      ASSERT_TRUE(SameBits(want, got)) << "n " << n;
      ASSERT_EQ(a.m, b.m);
      ASSERT_EQ(a.k, b.k);
      ASSERT_EQ(wa.events, wb.events);
    }
  }
}

inline void CheckRequantI8StaticRow(const RowOps& plain, const RowOps& fast) {
  TestRng rng(25);
  for (int rep = 0; rep < 40; ++rep) {
    for (int64_t n : kLengths) {
      const auto p = RandomRowI32(n, rng);
      const auto col = RandomMantissas(n, rng, 1, 1 << 16);
      const int64_t row_m = rng.Uniform(1, 1 << 16), row_k = rng.Uniform(0, 50);
      const int64_t col_k = rng.Uniform(0, 30), s_m = rng.Uniform(-5, 1 << 16),
                    s_k = rng.Uniform(0, 70);
      std::vector<int8_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      plain.RequantI8StaticRow(p.data(), n, row_m, row_k, col.data(), col_k, s_m, s_k, want.data());
      fast.RequantI8StaticRow(p.data(), n, row_m, row_k, col.data(), col_k, s_m, s_k, got.data());
      ASSERT_TRUE(SameBits(want, got))
          << "n " << n << " s_m " << s_m << " shift " << row_k + col_k - s_k;
    }
  }
}

inline void CheckRequantI8StaticColumns(const RowOps& plain, const RowOps& fast) {
  TestRng rng(30);
  for (int rep = 0; rep < 40; ++rep) {
    for (int64_t n : kLengths) {
      const auto p_random = RandomRowI64(n, rng, 50);
      std::vector<int64_t> s_m(static_cast<size_t>(n)), s_k(static_cast<size_t>(n));
      for (size_t i = 0; i < s_m.size(); ++i) {
        s_m[i] = rng.Uniform(0, 9) == 0 ? rng.Uniform(-3, 3) : rng.Uniform(1 << 15, (1 << 16) - 1);
        s_k[i] = rng.Uniform(0, 80);
      }
      const int64_t row_m = rng.Uniform(0, 4) == 0 ? rng.Uniform(-5, 1 << 16) : 1;
      const int64_t row_k = rng.Uniform(0, 60);
      auto p = p_random;
      if (row_m == 1) {
        // Quotients at and beside the rounding and saturation edges: |p| + den/2 = q * den + delta
        // with q near 127, 128, 255 and 256 (the scale shifts cancel: s_k = row_k).
        for (size_t i = 0; i < p.size(); i += 2) {
          const int64_t den = rng.Uniform(1, int64_t{1} << rng.Uniform(1, 40));
          const int64_t q = std::vector<int64_t>{
              0, 1, 126, 127, 128, 129, 254, 255, 256, 257}[static_cast<size_t>(rng.Uniform(0, 9))];
          const int64_t v = q * den - den / 2 + rng.Uniform(-1, 1);
          s_m[i] = den;
          s_k[i] = row_k;
          p[i] = rng.Uniform(0, 1) == 0 ? v : -v;
        }
      }
      std::vector<int8_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      plain.RequantI8StaticColumns(p.data(), n, row_m, row_k, s_m.data(), s_k.data(), want.data());
      fast.RequantI8StaticColumns(p.data(), n, row_m, row_k, s_m.data(), s_k.data(), got.data());
      ASSERT_TRUE(SameBits(want, got)) << "n " << n << " row_k " << row_k;
    }
  }
}

inline void CheckGreedyPickWithTiesAndEdges(const RowOps& plain, const RowOps& fast) {
  TestRng rng(31);
  for (int rep = 0; rep < 30; ++rep) {
    for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{8}, int64_t{9}, int64_t{77}, int64_t{1000},
                      int64_t{151936}}) {
      std::vector<int32_t> logits(static_cast<size_t>(n));
      std::vector<int64_t> head_m(static_cast<size_t>(n));
      const int64_t spread = rng.Uniform(0, 3) == 0 ? 3 : (int64_t{1} << 24);  // 3: many ties
      for (size_t i = 0; i < logits.size(); ++i) {
        logits[i] = static_cast<int32_t>(rng.Uniform(-spread, spread));
        head_m[i] = rng.Uniform(0, 2) == 0 ? 1 : rng.Uniform(1, 1 << 16);
      }
      if (rep % 7 == 0) head_m[static_cast<size_t>(n - 1)] = kInt64Min;  // wrapped products
      if (rep == 1)
        std::fill(head_m.begin(), head_m.end(), kInt64Min);  // every product INT64_MIN or 0
      ASSERT_EQ(plain.GreedyPick(logits.data(), head_m.data(), n),
                fast.GreedyPick(logits.data(), head_m.data(), n))
          << "n " << n << " rep " << rep;
    }
  }
}

// Per-column multipliers at the edge of the kernels' 32 x 32 -> 64 products (row_kernels_cpu.h:
// a row whose multipliers all lie in [0, 2^31) may take them): the largest such value, and values
// whose low 32 bits alone give a wrong product (2^31, 2^32 + 1, -1, INT64_MIN). Each goes at the
// first lane, the last (a vector's tail) and one in between, the other lanes weight mantissas.
inline void CheckMultiplierEdges(const RowOps& plain, const RowOps& fast) {
  TestRng rng(32);
  const int64_t edges[] = {(int64_t{1} << 31) - 1, int64_t{1} << 31, (int64_t{1} << 32) + 1, -1,
                           kInt64Min};
  for (int64_t n : kLengths) {
    for (int64_t edge : edges) {
      for (int64_t at : {int64_t{0}, rng.Uniform(0, n - 1), n - 1}) {
        std::vector<int64_t> m(static_cast<size_t>(n));
        for (auto& v : m) v = rng.Uniform(1, (1 << 16) - 1);
        m[static_cast<size_t>(at)] = edge;
        const auto p = RandomRowI32(n, rng);
        std::vector<int32_t> want(static_cast<size_t>(n)), got = p;
        const int64_t sa = plain.RequantI32(p.data(), m.data(), n, 16, want.data());
        const int64_t sb = fast.RequantI32(got.data(), m.data(), n, 16, got.data());
        ASSERT_EQ(sa, sb) << "n " << n << " edge " << edge << " at " << at;
        ASSERT_TRUE(SameBits(want, got)) << "n " << n << " edge " << edge << " at " << at;
        std::vector<int64_t> wide_want(static_cast<size_t>(n)), wide_got(static_cast<size_t>(n));
        plain.MulColumns(p.data(), m.data(), n, wide_want.data());
        fast.MulColumns(p.data(), m.data(), n, wide_got.data());
        ASSERT_TRUE(SameBits(wide_want, wide_got)) << "n " << n << " edge " << edge << " at " << at;
        ASSERT_EQ(plain.GreedyPick(p.data(), m.data(), n), fast.GreedyPick(p.data(), m.data(), n))
            << "n " << n << " edge " << edge << " at " << at;
      }
    }
  }
}

inline void CheckAddResidual(const RowOps& plain, const RowOps& fast) {
  TestRng rng(26);
  for (int rep = 0; rep < 40; ++rep) {
    for (int64_t n : kLengths) {
      const auto h0 = RandomRowI32(n, rng);
      const auto d = RandomRowI32(n, rng);
      const int64_t dm =
          rng.Uniform(0, 5) == 0 ? static_cast<int64_t>(rng.Next()) : rng.Uniform(1, 1 << 16);
      const int64_t k_res = rng.Uniform(-10, 60), dk = rng.Uniform(-40, 140);
      auto want = h0, got = h0;
      const int64_t ka = plain.AddResidual(want.data(), n, k_res, d.data(), dm, dk);
      const int64_t kb = fast.AddResidual(got.data(), n, k_res, d.data(), dm, dk);
      ASSERT_EQ(ka, kb);
      ASSERT_TRUE(SameBits(want, got)) << "n " << n << " rel " << dk - k_res;
    }
  }
}

inline void CheckMulColumnsAndRope(const RowOps& plain, const RowOps& fast) {
  TestRng rng(27);
  for (int rep = 0; rep < 20; ++rep) {
    for (int64_t n : kLengths) {
      const auto x32 = RandomRowI32(n, rng);
      const auto x64 = RandomRowI64(n, rng);
      const auto m = RandomRowI64(n, rng);
      std::vector<int64_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      plain.MulColumns(x32.data(), m.data(), n, want.data());
      fast.MulColumns(x32.data(), m.data(), n, got.data());
      ASSERT_TRUE(SameBits(want, got));
      plain.MulColumns(x64.data(), m.data(), n, want.data());
      auto in_place = x64;
      fast.MulColumns(in_place.data(), m.data(), n, in_place.data());
      ASSERT_TRUE(SameBits(want, in_place));
      const int64_t d = 2 * ((n + 1) / 2);
      auto ra = RandomRowI64(d, rng, 50), rb = ra;
      std::vector<int16_t> cs(static_cast<size_t>(d)), sn(static_cast<size_t>(d));
      for (size_t i = 0; i < cs.size(); ++i) {
        cs[i] = static_cast<int16_t>(rng.Uniform(-(1 << 14), 1 << 14));
        sn[i] = static_cast<int16_t>(rng.Uniform(-(1 << 14), 1 << 14));
      }
      plain.Rope(ra.data(), d, cs.data(), sn.data());
      fast.Rope(rb.data(), d, cs.data(), sn.data());
      ASSERT_TRUE(SameBits(ra, rb)) << "rope d " << d;
    }
  }
}

inline void CheckSwiglu(const RowOps& plain, const RowOps& fast) {
  TestRng rng(28);
  for (int rep = 0; rep < 30; ++rep) {
    for (int64_t n : kLengths) {
      auto g = RandomRowI32(n, rng);
      const auto u = RandomRowI32(n, rng);
      // Gates at and beside multiples of a small tpos, where a quotient's last bit is decided.
      const int64_t step = rng.Uniform(1, 1 << 12);
      for (size_t i = 1; i < g.size(); i += 3) {
        const int64_t v = rng.Uniform(0, 1 << 18) * step + rng.Uniform(-1, 1);
        g[i] = static_cast<int32_t>(rng.Uniform(0, 1) == 0 ? v : -v);
      }
      // Divisors around 2^31 and 2^32 border the kernels' 32-bit products (|g| <= 2^31).
      for (int64_t tpos : {int64_t{1}, int64_t{2}, int64_t{3}, rng.Uniform(4, 1 << 20), step,
                           (int64_t{1} << 31) - 1, int64_t{1} << 31, (int64_t{1} << 31) + 1,
                           (int64_t{1} << 32) - 1, int64_t{1} << 32, (int64_t{1} << 32) + 1,
                           rng.Uniform(1, int64_t{1} << 47), (int64_t{1} << 55) - 1,
                           int64_t{1} << 55, int64_t{1} << 62}) {
        std::vector<int64_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
        plain.Swiglu(g.data(), u.data(), n, tpos, want.data());
        fast.Swiglu(g.data(), u.data(), n, tpos, got.data());
        ASSERT_TRUE(SameBits(want, got)) << "n " << n << " tpos " << tpos;
      }
    }
  }
}

inline void CheckAttend(const RowOps& plain, const RowOps& fast) {
  TestRng rng(29);
  for (int64_t head_dim : {2, 6, 32, 128, 130}) {
    for (int64_t slots : {1, 2, 3, 4, 5, 15, 16, 17, 33, 100, 577}) {
      RandomKv kv(head_dim, slots + 5, rng);
      for (int rep = 0; rep < 6; ++rep) {
        std::vector<int8_t> q(static_cast<size_t>(head_dim));
        for (auto& x : q) x = static_cast<int8_t>(rng.Uniform(-128, 127));
        // Row scales from the designed range (tpos from 1 to 2^47) and wrapped ones.
        Dyadic scale{rng.Uniform(1 << 15, (1 << 16) - 1), rng.Uniform(0, 75)};
        if (rep == 5) scale = {static_cast<int64_t>(rng.Next()), rng.Uniform(-5, 130)};
        std::vector<int32_t> sa(static_cast<size_t>(slots)), sb(sa), pa(sa), pb(sa);
        std::vector<int64_t> ea(static_cast<size_t>(slots)), eb(ea);
        std::vector<int64_t> ca(static_cast<size_t>(head_dim)), cb(ca);
        const int64_t ta = plain.Attend(q.data(), kv.view, slots, scale, sa.data(), ea.data(),
                                        pa.data(), ca.data());
        const int64_t tb = fast.Attend(q.data(), kv.view, slots, scale, sb.data(), eb.data(),
                                       pb.data(), cb.data());
        ASSERT_EQ(ta, tb);
        ASSERT_TRUE(SameBits(pa, pb))
            << "probs d " << head_dim << " slots " << slots << " tpos " << ta;
        ASSERT_TRUE(SameBits(ca, cb))
            << "ctx d " << head_dim << " slots " << slots << " tpos " << ta;
      }
    }
  }
}

// A KV group's queries at once (the pair kernels read K and V once for two queries) against the
// plain per-query Attend: groups of 1 to 5 (odd ones end on a single query), and groups where
// one member's scale is wrapped (that pair leaves the fast path).
inline void CheckAttendGroup(const RowOps& plain, const std::vector<const RowOps*>& fasts) {
  TestRng rng(31);
  for (int64_t head_dim : {2, 6, 64, 128, 130, 256}) {
    // Around the context kernel's 64-slot chunks too.
    for (int64_t slots : {1, 3, 4, 16, 17, 63, 64, 65, 100, 129, 577}) {
      RandomKv kv(head_dim, slots + 5, rng);
      for (int64_t queries : {1, 2, 3, 4, 5}) {
        for (bool wrapped : {false, true}) {
          std::vector<int8_t> q(static_cast<size_t>(queries * head_dim));
          for (auto& x : q) x = static_cast<int8_t>(rng.Uniform(-128, 127));
          std::vector<Dyadic> scales(static_cast<size_t>(queries));
          for (auto& s : scales) s = {rng.Uniform(1 << 15, (1 << 16) - 1), rng.Uniform(0, 75)};
          if (wrapped) {
            scales[static_cast<size_t>(rng.Uniform(0, queries - 1))] = {
                static_cast<int64_t>(rng.Next()), rng.Uniform(-5, 130)};
          }
          for (const RowOps* fast : fasts) {
            const int64_t stride = slots + 3;  // rows of scratch further apart than the slots
            const auto rows = static_cast<size_t>(queries * stride);
            std::vector<int32_t> scores(rows), probs(rows, -1);
            std::vector<int64_t> exps(rows);
            std::vector<int64_t> ctx(static_cast<size_t>(queries * head_dim)), tpos(scales.size());
            fast->AttendGroup(queries, q.data(), kv.view, slots, scales.data(), stride,
                              scores.data(), exps.data(), probs.data(), ctx.data(), tpos.data());
            for (int64_t i = 0; i < queries; ++i) {
              std::vector<int32_t> s1(static_cast<size_t>(slots)), p1(s1);
              std::vector<int64_t> e1(static_cast<size_t>(slots)),
                  c1(static_cast<size_t>(head_dim));
              const int64_t t1 = plain.Attend(q.data() + i * head_dim, kv.view, slots,
                                              scales[static_cast<size_t>(i)], s1.data(), e1.data(),
                                              p1.data(), c1.data());
              ASSERT_EQ(t1, tpos[static_cast<size_t>(i)]) << "query " << i;
              const std::vector<int32_t> p_got(probs.begin() + i * stride,
                                               probs.begin() + i * stride + slots);
              const std::vector<int64_t> c_got(ctx.begin() + i * head_dim,
                                               ctx.begin() + (i + 1) * head_dim);
              ASSERT_TRUE(SameBits(p1, p_got)) << "probs d " << head_dim << " slots " << slots
                                               << " query " << i << "/" << queries;
              ASSERT_TRUE(SameBits(c1, c_got))
                  << "ctx d " << head_dim << " slots " << slots << " query " << i << "/" << queries;
            }
          }
        }
      }
    }
  }
}

}  // namespace dv::test
