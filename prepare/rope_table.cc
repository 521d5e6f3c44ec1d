// Compiled with -ffp-contract=off -fno-math-errno (prepare/CMakeLists.txt).
#include "prepare/rope_table.h"

#include "prepare/calib_forward.h"
#include "prepare/portable_math.h"

namespace dv {
namespace {

// |(hi + lo) - nearest half-integer| for a value given in double-double.
double DistanceToHalf(double hi, double lo) {
  const double f = pmath::Floor(hi);
  const double r = (hi - f) + lo;  // hi - f is exact (Sterbenz / small integers)
  const double d = r - 0.5;
  return d < 0 ? -d : d;
}

}  // namespace

RopeTables BuildRopeTables(int64_t max_pos, int64_t head_dim, double theta) {
  RopeTables t;
  const int64_t half = head_dim / 2;
  const std::vector<double> inv = RopeInverseFrequencies(theta, head_dim);
  t.cos_q14.assign(static_cast<size_t>(max_pos * head_dim), 0);
  t.sin_q14.assign(static_cast<size_t>(max_pos * head_dim), 0);
  constexpr double kScale = 16384.0;  // 2^14
  for (int64_t pos = 0; pos < max_pos; ++pos) {
    const double p = static_cast<double>(pos);
    for (int64_t j = 0; j < half; ++j) {
      const double angle = p * inv[static_cast<size_t>(j)];
      double ch = 0, cl = 0, sh = 0, sl = 0;
      pmath::CosSinDoubleDouble(angle, ch, cl, sh, sl);
      const auto c = static_cast<int64_t>(pmath::RoundHalfEven(ch * kScale));
      const auto s = static_cast<int64_t>(pmath::RoundHalfEven(sh * kScale));
      if (pos > 0) {
        const double band =
            kScale * (p * pmath::Ulp(inv[static_cast<size_t>(j)]) + pmath::Ulp(angle) + 0x1p-50);
        if (DistanceToHalf(ch * kScale, cl * kScale) < band) ++t.sensitive_entries;
        if (DistanceToHalf(sh * kScale, sl * kScale) < band) ++t.sensitive_entries;
      }
      for (int64_t col : {j, j + half}) {
        t.cos_q14[static_cast<size_t>(pos * head_dim + col)] = c;
        t.sin_q14[static_cast<size_t>(pos * head_dim + col)] = s;
      }
    }
  }
  return t;
}

}  // namespace dv
