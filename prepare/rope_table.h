// The Q14 RoPE tables of a detllm-v1 artifact, as DetLLM's build_rope_tables computes them in
// torch float64: inv_j = theta^((-2.0 j) / d), angle = pos * inv_j, entry = round(cos(angle) *
// 2^14) (ties to even), the d/2 angles tiled twice (rotate-half layout). Here pow and cos/sin are
// prepare/portable_math.h's, so the table is the same on every machine.
//
// Why it equals DetLLM's: torch's pow on AVX2/AVX-512 builds (SLEEF) is not correctly rounded
// for every j (theta 1e6, d 128: j = 50 differs by one ulp from glibc's pow, torch's
// ATEN_CPU_CAPABILITY=default path), and its cos/sin are within one ulp. So DetLLM's own tables
// are only well defined where no entry lies near a rounding boundary. Each entry's distance to
// the nearest half-integer is measured in double-double and compared with what a 1-ulp change of
// inv_j (pos * ulp(inv_j) + ulp(angle)) and a 2^-50 error of cos/sin could move it; entries
// inside that band are counted as sensitive. For every shape checked (tests/prepare: p-small,
// the synthetic presets, Qwen3-0.6B's 40960 x 128, SmolLM2's theta 1e5) there are none: the
// tables are the same for every correct implementation of the formula.
#pragma once

#include <cstdint>
#include <vector>

namespace dv {

struct RopeTables {
  std::vector<int64_t> cos_q14, sin_q14;  // [max_pos, head_dim], values in [-2^14, 2^14]
  int64_t sensitive_entries = 0;          // cos and sin entries inside the uncertainty band
};

RopeTables BuildRopeTables(int64_t max_pos, int64_t head_dim, double theta);

}  // namespace dv
