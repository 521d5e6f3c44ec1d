// AVX-512 VNNI int8 GEMM kernel (compiled with -mavx512f/bw/vl/vnni; only called when CPUID
// reports all four).
//
// vpdpbusd multiplies unsigned bytes by signed bytes and adds groups of four products into
// int32 lanes, without saturation (the saturating form is vpdpbusds, not used). Weights are
// stored as W + 128 (unsigned); activations stay signed and are broadcast straight from memory,
// four k values at a time. Each lane then holds sum (W + 128) * a, and 128 * sum_k a (the row
// sum) is subtracted at the end. All of it wraps modulo 2^32 and the true result fits int32, so
// it is exact for every int8 input, -128 included.
//
// Panels are 48 columns (three zmm accumulators per row); rows are taken eight at a time, so the
// inner loop does 3 weight loads, 8 broadcasts and 24 vpdpbusd per group of four k values, and a
// decode batch of 8 rows reads each weight byte once, in one pass (64-column panels held only 6
// rows in registers: the other 2 re-read every panel, and batch-8 decode ran ~10% slower).
// This file includes only intrinsics and the kernel table's declaration; every function is
// internal, so no AVX-512 code can be linked in for other callers.
#include <immintrin.h>

#include <cstring>

#include "engine/backends/matmul_i8_cpu.h"

namespace dv {
namespace {

constexpr int64_t kNr = 48;
constexpr int64_t kVectors = kNr / 16;
constexpr int kMaxRows = 8;

inline int32_t Load4(const int8_t* a) {
  int32_t v;
  std::memcpy(&v, a, 4);
  return v;
}

// How far ahead of its loads the 8-row block streaming a product also asks for the weights
// into L1 (kNear below).
constexpr int64_t kNearPrefetchBytes = 1024;

// Rows [0, kRows) of a (lda bytes apart, lda a multiple of 4) times one panel. With kPrefetch,
// each group also asks for the weight bytes `pf` ahead of it into L2 (panels lie back to back,
// so that runs on into the next panel; a prefetch past the end of the weights cannot fault).
// With kNear as well, the same bytes kNearPrefetchBytes ahead into L1: 8 rows fill the core's
// reorder window with vpdpbusd waiting on their weights, so the block's own loads run only
// about 2 KiB ahead and each one that misses L1 holds that work up. Only where the product is
// this one block (a decode batch of 8: every panel read once, from memory); blocks that re-read
// a panel from L2 (prefill) would only gain instructions. Measured on the Intel Xeon host
// (docs/RESULTS.md, "A near prefetch for the 8-row stream").
template <int kRows, bool kPrefetch, bool kNear = false>
void Block(const int8_t* a, int64_t lda, const uint8_t* panel, const int32_t* row_sums, int32_t* c,
           int64_t ldc, int64_t cols, int64_t pf) {
  constexpr size_t kR = kRows;
  constexpr auto kV = static_cast<size_t>(kVectors);
  __m512i acc[kR][kV];
#pragma GCC unroll 8
  for (size_t r = 0; r < kR; ++r) {
#pragma GCC unroll 4
    for (size_t q = 0; q < kV; ++q) acc[r][q] = _mm512_setzero_si512();
  }
  // (One loop, no lambda and no helper taking the accumulators by reference: otherwise GCC keeps
  // them in memory.)
  const uint8_t* w = panel;
  for (int64_t g = 0; g < lda / 4; ++g, w += 4 * kNr) {
    const __m512i w0 = _mm512_loadu_si512(w);
    const __m512i w1 = _mm512_loadu_si512(w + 64);
    const __m512i w2 = _mm512_loadu_si512(w + 128);
    if constexpr (kPrefetch) {
      // Into L2 (the load brings the line on into L1): faster than prefetcht0 on the streams
      // of 1 and 8 rows (docs/NOTES.md, "Software prefetch of the weights").
      _mm_prefetch(reinterpret_cast<const char*>(w + pf), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(w + pf + 64), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(w + pf + 128), _MM_HINT_T1);
      if constexpr (kNear) {
        _mm_prefetch(reinterpret_cast<const char*>(w + kNearPrefetchBytes), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(w + kNearPrefetchBytes + 64), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(w + kNearPrefetchBytes + 128), _MM_HINT_T0);
      }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < kR; ++r) {
      const __m512i br = _mm512_set1_epi32(Load4(a + static_cast<int64_t>(r) * lda + 4 * g));
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], w0, br);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], w1, br);
      acc[r][2] = _mm512_dpbusd_epi32(acc[r][2], w2, br);
    }
  }
  const __mmask16 last_mask =
      static_cast<__mmask16>((1u << static_cast<unsigned>(cols % 16 == 0 ? 16 : cols % 16)) - 1u);
#pragma GCC unroll 8
  for (size_t r = 0; r < kR; ++r) {
    // 128 * row sum, modulo 2^32.
    const __m512i corr =
        _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(row_sums[r]) << 7));
    int32_t* out = c + static_cast<int64_t>(r) * ldc;
#pragma GCC unroll 4
    for (size_t q = 0; q < kV; ++q) {
      const __m512i v = _mm512_sub_epi32(acc[r][q], corr);
      const auto start = static_cast<int64_t>(16 * q);
      if (start + 16 <= cols) {
        _mm512_storeu_si512(out + start, v);
      } else if (start < cols) {
        _mm512_mask_storeu_epi32(out + start, last_mask, v);
      }
    }
  }
}

template <int kRows>
void Rows(const MatmulI8Args& args, int64_t r, const uint8_t* panel, int64_t col0, int64_t cols) {
  if constexpr (kRows == kMaxRows) {
    // The whole product one block of rows: each panel is read once, from memory.
    if (args.prefetch_bytes > 0 && args.m <= kMaxRows) {
      Block<kRows, true, true>(args.a + r * args.lda, args.lda, panel, args.row_sums + r,
                               args.c + r * args.n + col0, args.n, cols, args.prefetch_bytes);
      return;
    }
  }
  if (args.prefetch_bytes > 0) {
    Block<kRows, true>(args.a + r * args.lda, args.lda, panel, args.row_sums + r,
                       args.c + r * args.n + col0, args.n, cols, args.prefetch_bytes);
  } else {
    Block<kRows, false>(args.a + r * args.lda, args.lda, panel, args.row_sums + r,
                        args.c + r * args.n + col0, args.n, cols, 0);
  }
}

// Rows [r, r + rows) against one panel, 1 <= rows <= kMaxRows.
void RowBlock(const MatmulI8Args& args, int64_t r, int64_t rows, const uint8_t* panel, int64_t col0,
              int64_t cols) {
  switch (rows) {
    case 1:
      Rows<1>(args, r, panel, col0, cols);
      break;
    case 2:
      Rows<2>(args, r, panel, col0, cols);
      break;
    case 3:
      Rows<3>(args, r, panel, col0, cols);
      break;
    case 4:
      Rows<4>(args, r, panel, col0, cols);
      break;
    case 5:
      Rows<5>(args, r, panel, col0, cols);
      break;
    case 6:
      Rows<6>(args, r, panel, col0, cols);
      break;
    case 7:
      Rows<7>(args, r, panel, col0, cols);
      break;
    default:
      Rows<8>(args, r, panel, col0, cols);
      break;
  }
}

void MatmulAvx512Vnni(const MatmulI8Args& args, int64_t panel_begin, int64_t panel_end) {
  const int64_t panel_bytes = args.lda * kNr;
  // Rows in blocks of 8 (24 accumulators), the remainder in one smaller block.
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const uint8_t* panel = args.panels + p * panel_bytes;
    const int64_t col0 = p * kNr;
    const int64_t cols = args.n - col0 < kNr ? args.n - col0 : kNr;
    for (int64_t r = 0; r < args.m; r += kMaxRows) {
      RowBlock(args, r, args.m - r < kMaxRows ? args.m - r : kMaxRows, panel, col0, cols);
    }
  }
}

// sum_k a[k] per row: vpsadbw sums (a ^ 0x80) = a + 128 in groups of eight bytes.
void RowSumsAvx512(const int8_t* a, int64_t m, int64_t k, int32_t* sums) {  // k: row stride
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t r = 0; r < m; ++r) {
    const int8_t* row = a + r * k;
    __m512i acc = _mm512_setzero_si512();
    int64_t i = 0;
    for (; i + 64 <= k; i += 64) {
      const __m512i x = _mm512_xor_si512(_mm512_loadu_si512(row + i), flip);
      acc = _mm512_add_epi64(acc, _mm512_sad_epu8(x, _mm512_setzero_si512()));
    }
    alignas(64) int64_t lanes[8];
    _mm512_store_si512(lanes, acc);
    int64_t s = -128 * i;
    for (int64_t lane : lanes) s += lane;
    for (; i < k; ++i) s += row[i];
    sums[r] = static_cast<int32_t>(s);
  }
}

// The probe reads as the kernel does: 64-byte loads, and the same prefetch distance.
uint64_t StreamReadAvx512(const uint8_t* p, int64_t n, int64_t pf) {
  __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 128 <= n; i += 128) {
    if (pf > 0) {
      _mm_prefetch(reinterpret_cast<const char*>(p + i + pf), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(p + i + pf + 64), _MM_HINT_T1);
    }
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 64));
  }
  if (i < n) a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(a0, a1));
  uint64_t sum = 0;
  for (uint64_t lane : lanes) sum += lane;
  return sum;
}

constexpr MatmulI8Kernel kAvx512VnniKernel = {
    .isa = CpuIsa::kAvx512Vnni,
    .panel_cols = kNr,
    .offset_weights = true,
    // 4 KiB ahead: on the Intel Xeon host without AMX the 8-row stream ran 172-188 -> 191-216
    // GMAC/s against 2 KiB (the 1-row stream alike); docs/RESULTS.md, "The Intel Xeon host without
    // AMX".
    .prefetch_bytes = 4096,
    .matmul = &MatmulAvx512Vnni,
    .row_sums = &RowSumsAvx512,
    .stream_read = &StreamReadAvx512,
};

}  // namespace

const MatmulI8Kernel* MatmulI8KernelAvx512Vnni() { return &kAvx512VnniKernel; }

}  // namespace dv
