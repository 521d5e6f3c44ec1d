// AMX int8 GEMM kernel (compiled with -mamx-tile -mamx-int8 and the AVX-512 flags; only called
// when CPUID, XCR0 and the OS grant the tiles: CpuSupports(CpuIsa::kAmx)).
//
// tdpbsud multiplies the signed bytes of an A tile (activations) by the unsigned bytes of a B
// tile (the weights stored as W + 128: the AVX-512 VNNI kernel's panels, read in place) and adds
// each group of four products into an int32 lane without saturation, wrapping modulo 2^32 as
// vpdpbusd does; 128 * row sum is subtracted at the end, so the result is exact for every int8
// input, -128 included.
//
// A 48-column panel gives three B tiles per 64 k values: tile q holds groups [g, g + 16) x
// columns [16q, 16q + 16), 64 bytes per group, the panel's 192-byte group stride apart. Rows go
// 16 at a time (one A tile of up to 16 x 64 bytes, three C tiles of up to 16 x 16 int32); a
// product of more than 16 rows takes its last, partial block of rows through a zero-padded copy,
// so the tile shape is set once per call. k values past the last whole 64 are added by the
// VNNI loop to the stored C tiles. Products of fewer than kMinRows rows, or fewer than 64 k
// values, are the AVX-512 VNNI kernel's: a tile pass costs more than it saves there.
//
// This file includes only intrinsics and the kernel table's declaration; every function is
// internal, so no AMX or AVX-512 code can be linked in for other callers.
#include <immintrin.h>

#include <cstring>

#include "engine/backends/matmul_i8_cpu.h"

namespace dv {
namespace {

constexpr int64_t kNr = 48;
constexpr int64_t kGroupBytes = 4 * kNr;  // one group of 4 k values in a panel
constexpr int64_t kTileRows = 16;
constexpr int64_t kTileK = 64;  // k values (bytes of an A row) per tile step: 16 groups
constexpr int64_t kTileStepBytes = kTileK / 4 * kGroupBytes;  // panel bytes per tile step
// Fewest rows the tiles take: below, the VNNI kernel streams the weights as fast and computes
// more cheaply (docs/NOTES.md, "AMX").
constexpr int64_t kMinRows = 4;

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of each tile
  uint8_t rows[16] = {};
};

// Tiles 0-2: C (rows x 16 int32); 3: A (rows x 64 bytes); 4-6: B (16 groups x 64 bytes).
void ConfigureTiles(int64_t rows) {
  TileConfig config;
  for (int t = 0; t < 4; ++t) {
    config.rows[t] = static_cast<uint8_t>(rows);
    config.colsb[t] = 64;
  }
  for (int t = 4; t < 7; ++t) {
    config.rows[t] = kTileRows;
    config.colsb[t] = 64;
  }
  _tile_loadconfig(&config);
}

inline int32_t Load4(const int8_t* a) {
  int32_t v;
  std::memcpy(&v, a, 4);
  return v;
}

// c_block[r][0..48) += sum over groups [g_begin, g_end) of a row r times the panel (VNNI), for
// the k values the tiles leave.
void AddTail(const int8_t* a, int64_t lda, int64_t rows, const uint8_t* panel, int64_t g_begin,
             int64_t g_end, int32_t* c_block) {
  for (int64_t r = 0; r < rows; ++r) {
    int32_t* out = c_block + r * kNr;
    __m512i acc0 = _mm512_loadu_si512(out);
    __m512i acc1 = _mm512_loadu_si512(out + 16);
    __m512i acc2 = _mm512_loadu_si512(out + 32);
    for (int64_t g = g_begin; g < g_end; ++g) {
      const uint8_t* w = panel + g * kGroupBytes;
      const __m512i br = _mm512_set1_epi32(Load4(a + r * lda + 4 * g));
      acc0 = _mm512_dpbusd_epi32(acc0, _mm512_loadu_si512(w), br);
      acc1 = _mm512_dpbusd_epi32(acc1, _mm512_loadu_si512(w + 64), br);
      acc2 = _mm512_dpbusd_epi32(acc2, _mm512_loadu_si512(w + 128), br);
    }
    _mm512_storeu_si512(out, acc0);
    _mm512_storeu_si512(out + 16, acc1);
    _mm512_storeu_si512(out + 32, acc2);
  }
}

// Rows [r0, r0 + rows) of the product against one panel. `a_rows` holds those rows (lda bytes
// apart, or 64 bytes apart in `padded`'s copies when the block is padded); the tiles are
// configured for `tile_rows` >= rows.
void Block(const MatmulI8Args& args, int64_t r0, int64_t rows, int64_t tile_rows,
           const uint8_t* panel, int64_t col0, int64_t cols, bool prefetch) {
  alignas(64) int32_t c_block[kTileRows * kNr];
  alignas(64) int8_t padded[kTileRows * kTileK];
  const int64_t k_steps = args.lda / kTileK;
  const int8_t* a = args.a + r0 * args.lda;
  const int64_t pf = args.prefetch_bytes;
  if (rows < tile_rows) std::memset(padded, 0, sizeof(padded));
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  for (int64_t s = 0; s < k_steps; ++s) {
    const uint8_t* b = panel + s * kTileStepBytes;
    if (rows < tile_rows) {
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(padded + r * kTileK, a + r * args.lda + s * kTileK, kTileK);
      }
      _tile_loadd(3, padded, kTileK);
    } else {
      _tile_loadd(3, a + s * kTileK, args.lda);
    }
    _tile_loadd(4, b, kGroupBytes);
    _tile_loadd(5, b + 64, kGroupBytes);
    _tile_loadd(6, b + 128, kGroupBytes);
    _tile_dpbsud(0, 3, 4);
    _tile_dpbsud(1, 3, 5);
    _tile_dpbsud(2, 3, 6);
    // After the step's tile products, not before its loads: the prefetches no longer wait
    // behind the tile loads' misses (one thread's 8-row stream gained most; docs/RESULTS.md,
    // "second pass").
    if (prefetch) {
      for (int64_t line = 0; line < kTileStepBytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(b + pf + line), _MM_HINT_T1);
      }
    }
  }
  _tile_stored(0, c_block, kNr * 4);
  _tile_stored(1, c_block + 16, kNr * 4);
  _tile_stored(2, c_block + 32, kNr * 4);
  AddTail(a, args.lda, rows, panel, k_steps * kTileK / 4, args.lda / 4, c_block);
  const __mmask16 last_mask =
      static_cast<__mmask16>((1u << static_cast<unsigned>(cols % 16 == 0 ? 16 : cols % 16)) - 1u);
  for (int64_t r = 0; r < rows; ++r) {
    // 128 * row sum, modulo 2^32.
    const __m512i corr =
        _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(args.row_sums[r0 + r]) << 7));
    int32_t* out = args.c + (r0 + r) * args.n + col0;
    for (int64_t q = 0; q < 3; ++q) {
      const __m512i v = _mm512_sub_epi32(_mm512_loadu_si512(c_block + r * kNr + 16 * q), corr);
      const int64_t start = 16 * q;
      if (start + 16 <= cols) {
        _mm512_storeu_si512(out + start, v);
      } else if (start < cols) {
        _mm512_mask_storeu_epi32(out + start, last_mask, v);
      }
    }
  }
}

void MatmulAmx(const MatmulI8Args& args, int64_t panel_begin, int64_t panel_end) {
  if (args.m < kMinRows || args.lda < kTileK) {
    MatmulI8KernelAvx512Vnni()->matmul(args, panel_begin, panel_end);
    return;
  }
  const int64_t tile_rows = args.m < kTileRows ? args.m : kTileRows;
  ConfigureTiles(tile_rows);
  const int64_t panel_bytes = args.lda * kNr;
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const uint8_t* panel = args.panels + p * panel_bytes;
    const int64_t col0 = p * kNr;
    const int64_t cols = args.n - col0 < kNr ? args.n - col0 : kNr;
    for (int64_t r = 0; r < args.m; r += kTileRows) {
      const int64_t rows = args.m - r < kTileRows ? args.m - r : kTileRows;
      // Only the first pass over a panel streams it from memory; the others find it cached.
      Block(args, r, rows, tile_rows, panel, col0, cols, r == 0 && args.prefetch_bytes > 0);
    }
  }
  _tile_release();
}

constexpr MatmulI8Kernel kAmxKernel = {
    .isa = CpuIsa::kAmx,
    .panel_cols = kNr,
    .offset_weights = true,
    .prefetch_bytes = 2048,  // 1-8 KiB alike (docs/NOTES.md, "AMX for products ...")
    .matmul = &MatmulAmx,
    .row_sums = nullptr,     // set below: the VNNI kernel's
    .stream_read = nullptr,  // set below: the VNNI kernel's
};

// The layout, row sums and probe are the VNNI kernel's (the same panels, read in place).
MatmulI8Kernel MakeAmxKernel() {
  MatmulI8Kernel k = kAmxKernel;
  k.row_sums = MatmulI8KernelAvx512Vnni()->row_sums;
  k.stream_read = MatmulI8KernelAvx512Vnni()->stream_read;
  return k;
}

}  // namespace

const MatmulI8Kernel* MatmulI8KernelAmx() {
  static const MatmulI8Kernel kernel = MakeAmxKernel();
  return &kernel;
}

}  // namespace dv
