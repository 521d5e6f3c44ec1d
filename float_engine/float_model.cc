#include "float_engine/float_model.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <exception>
#include <stdexcept>

#include "base/check.h"
#include "checkpoint/half_float.h"
#include "float_engine/blas.h"
#include "float_engine/float_linear.h"
#include "os/huge_pages.h"

namespace dv {

const char* FloatDTypeName(FloatDType dtype) {
  return KindName(dtype).data();  // the spellings are NUL-terminated literals
}

FloatDType ParseFloatDType(const std::string& name) {
  const std::optional<FloatDType> dtype = ParseKind<FloatDType>(name);
  if (dtype) return *dtype;
  throw FloatEngineError("float dtype must be fp32, bf16 or fp16, not '" + name + "'");
}

FloatKvCache::FloatKvCache(const FloatModelConfig& c, int64_t capacity)
    : n_kv_heads_(c.n_kv_heads), head_dim_(c.head_dim), capacity_(capacity) {
  DV_CHECK(capacity >= 1) << "a KV cache needs capacity >= 1, got " << capacity;
  const auto n = static_cast<size_t>(c.n_layers * c.n_kv_heads * capacity * c.head_dim);
  k_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

struct FloatQwen3::Layer {
  const float* input_norm = nullptr;  // [H]
  const float* post_norm = nullptr;   // [H]
  Matrix wqkv;                        // [Q*d + 2*KV*d, H]: q, k, v rows stacked
  const float* bqkv = nullptr;        // [Q*d + 2*KV*d] or null
  const float* q_norm = nullptr;      // [d] or null
  const float* k_norm = nullptr;      // [d] or null
  Matrix wo;                          // [H, Q*d]
  const float* bo = nullptr;          // [H] or null
  Matrix wgu;                         // [2I, H]: gate rows, then up rows
  const float* bgu = nullptr;         // [2I] or null
  Matrix wd;                          // [H, I]
  const float* bd = nullptr;          // [H] or null
};

// Per-call buffers, grown to the largest call and reused (T = tokens of the call).
struct FloatQwen3::Scratch {
  std::vector<float> x;                  // [T, H] residual stream
  std::vector<float> h;                  // [T, H] normalised
  std::vector<float> qkv;                // [T, Q*d + 2*KV*d]
  std::vector<float> attn;               // [T, Q*d]
  std::vector<float> o;                  // [T, H] o_proj / down_proj output
  std::vector<float> gu;                 // [T, 2I]
  std::vector<float> act;                // [T, I]
  std::vector<float> scores;             // [T_row, S] attention probabilities of one (row, head)
  std::vector<float> sums;               // [T_row]
  std::vector<float> cos, sin;           // [T, d]
  std::vector<float> head_in, head_out;  // [R, H], [R, V]
  std::vector<float*> head_dst;          // where each head output row goes
  std::vector<int64_t> first_token;      // [rows]: each row's first token in this call
  std::vector<int64_t> decode_rows;      // the rows of one token (AttendDecodeRows)
  std::vector<std::vector<float>> thread_scores;  // per pool thread: [1 + S] sum and scores
  std::vector<float> wide_weights;  // a block of bf16 weight rows widened for sgemm (prefill)
};

namespace {

template <typename T>
void Grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// fp32 dot product in 8 interleaved partial sums (the compiler vectorizes it), combined pairwise.
float Dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (; i < n; ++i) acc[0] += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

float FloatQwen3::R(float v) const {
  switch (options_.dtype) {
    case FloatDType::kBf16:
      return RoundToBf16(v);
    case FloatDType::kFp16:
      return RoundToF16(v);
    case FloatDType::kFp32:
      break;
  }
  return v;
}

void FloatQwen3::RoundSpan(float* v, int64_t n) const {
  if (options_.dtype == FloatDType::kFp16) {
    for (int64_t i = 0; i < n; ++i) v[i] = RoundToF16(v[i]);
    return;
  }
  if (options_.dtype != FloatDType::kBf16) return;
  // RoundToBf16 without its branch, so the loop vectorizes: round half to even on the bits,
  // NaNs kept quiet NaNs.
  for (int64_t i = 0; i < n; ++i) {
    const auto bits = std::bit_cast<uint32_t>(v[i]);
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
    const uint32_t nan = (bits | 0x00400000u) & 0xffff0000u;
    v[i] = std::bit_cast<float>((bits & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
  }
}

namespace {

constexpr size_t kSliceAlign = 64;

size_t AlignUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Bytes of every tensor the engine widens (FloatQwen3's constructor takes them in this order):
// the linear weights at `matrix_element` bytes a value (4: fp32, 2: bfloat16), the rest fp32.
size_t WeightBytes(const FloatWeights& w, size_t matrix_element) {
  size_t bytes = 0;
  auto add_as = [&](const FloatTensor& t, size_t element) {
    bytes += AlignUp(static_cast<size_t>(t.numel()) * element, kSliceAlign);
  };
  auto add = [&](const FloatTensor& t) { add_as(t, sizeof(float)); };
  auto add_opt = [&](const std::optional<FloatTensor>& t) {
    if (t) add(*t);
  };
  for (const FloatLayerWeights& l : w.layers) {
    for (const FloatTensor* t : {&l.input_norm, &l.post_norm}) add(*t);
    for (const FloatTensor* t : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) {
      add_as(*t, matrix_element);
    }
    for (const auto* t : {&l.q_bias, &l.k_bias, &l.v_bias, &l.o_bias, &l.q_norm, &l.k_norm,
                          &l.gate_bias, &l.up_bias, &l.down_bias}) {
      add_opt(*t);
    }
  }
  add(w.final_norm);
  add_as(w.lm_head, matrix_element);
  return bytes;  // stacked tensors take one slice, never more than their separate slices
}

}  // namespace

FloatQwen3::WeightMemory::WeightMemory(size_t bytes) {
  // 2 MiB-aligned and advised for huge pages where the OS has them (os/huge_pages.h): the
  // kernel's THP policy decides.
  const size_t size = AlignUp(std::max<size_t>(bytes, 1), os::kHugePageBytes);
  base_ = os::MapAligned(size, true);
  mapped_ = size;
}

FloatQwen3::WeightMemory::~WeightMemory() {
  if (base_) os::UnmapAligned(base_, mapped_);
}

uint8_t* FloatQwen3::WeightMemory::Take(int64_t values, size_t element) {
  const size_t bytes = AlignUp(static_cast<size_t>(values) * element, kSliceAlign);
  DV_CHECK(used_ + bytes <= mapped_)
      << "float engine: weight memory undersized: " << used_ << " + " << bytes << " > " << mapped_;
  uint8_t* out = base_ + used_;
  used_ += bytes;
  return out;
}

FloatQwen3::FloatQwen3(const FloatCheckpoint& checkpoint, const FloatEngineOptions& options)
    : checkpoint_(checkpoint),
      config_(checkpoint.config()),
      options_(options),
      scratch_(std::make_unique<Scratch>()) {
  if (const std::string why = CheckFloatModelConfig(config_); !why.empty()) {
    throw FloatEngineError(checkpoint.source() +
                           ": the float engine cannot run this model: " + why);
  }
  SetBlasThreads(options.threads);
  small_gemm_ = SmallGemmIsaForThisMachine();
  // bf16 weights stay 16-bit where the small-batch kernel widens them as it streams them (half
  // the bytes a decode step reads); elsewhere, and for a device backend, they are stored as
  // their fp32 values.
  bf16_matrices_ =
      options_.dtype == FloatDType::kBf16 && !options_.linear && small_gemm_ != SmallGemmIsa::kNone;
  pool_ = std::make_unique<os::ThreadPool>(options.threads >= 1 ? options.threads : BlasThreads());
  const FloatModelConfig& c = config_;
  weights_ = std::make_unique<WeightMemory>(
      WeightBytes(checkpoint.weights(), bf16_matrices_ ? sizeof(uint16_t) : sizeof(float)));
  // The one copy: each tensor widened into the weight memory (bf16/fp16: rounded to it), its
  // mapped pages released once copied. The pool widens pieces of each tensor side by side (a
  // conversion, the same values in any order): the load of a demo row is mostly this copy and
  // the page faults of the fresh memory.
  constexpr int64_t kWidenChunk = int64_t{1} << 16;  // elements; a multiple of every block size
  // bf16_bits: stored as bfloat16 bit patterns (the rounded fp32 value's high half) instead.
  auto copy = [&](std::initializer_list<const FloatTensor*> parts, bool bf16_bits) -> uint8_t* {
    int64_t n = 0;
    for (const FloatTensor* t : parts) n += t->numel();
    uint8_t* out = weights_->Take(n, bf16_bits ? sizeof(uint16_t) : sizeof(float));
    auto* out_f32 = reinterpret_cast<float*>(out);
    auto* out_bf16 = reinterpret_cast<uint16_t*>(out);
    int64_t at = 0;
    for (const FloatTensor* t : parts) {
      const int64_t numel = t->numel();
      std::exception_ptr failure;
      std::atomic<bool> failed{false};
      os::ParallelFor(*pool_, (numel + kWidenChunk - 1) / kWidenChunk,
                      [&](int64_t begin, int64_t end, int) {
                        std::vector<float> staged;
                        for (int64_t chunk = begin; chunk < end; ++chunk) {
                          const int64_t first = chunk * kWidenChunk;
                          const int64_t count = std::min(numel - first, kWidenChunk);
                          try {
                            if (bf16_bits) staged.resize(static_cast<size_t>(count));
                            float* dst = bf16_bits ? staged.data() : out_f32 + at + first;
                            DecodeFloat32(*t, first, {dst, static_cast<size_t>(count)});
                            RoundSpan(dst, count);
                            if (bf16_bits) {
                              for (int64_t i = 0; i < count; ++i) {
                                out_bf16[at + first + i] =
                                    static_cast<uint16_t>(std::bit_cast<uint32_t>(dst[i]) >> 16);
                              }
                            }
                          } catch (...) {
                            if (!failed.exchange(true)) failure = std::current_exception();
                          }
                        }
                      });
      if (failure) std::rethrow_exception(failure);
      at += numel;
      if (t->name != checkpoint.weights().embed.name) checkpoint.ReleasePages(*t);
    }
    return out;
  };
  auto widen = [&](std::initializer_list<const FloatTensor*> parts) -> const float* {
    return reinterpret_cast<const float*>(copy(parts, false));
  };
  auto matrix = [&](std::initializer_list<const FloatTensor*> parts) -> Matrix {
    if (bf16_matrices_)
      return Matrix{nullptr, reinterpret_cast<const uint16_t*>(copy(parts, true))};
    return Matrix{reinterpret_cast<const float*>(copy(parts, false)), nullptr};
  };
  const FloatWeights& w = checkpoint.weights();
  layers_.resize(static_cast<size_t>(c.n_layers));
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const FloatLayerWeights& s = w.layers[static_cast<size_t>(i)];
    Layer& l = layers_[static_cast<size_t>(i)];
    l.input_norm = widen({&s.input_norm});
    l.wqkv = matrix({&s.q, &s.k, &s.v});
    if (s.q_bias) l.bqkv = widen({&*s.q_bias, &*s.k_bias, &*s.v_bias});
    if (s.q_norm) l.q_norm = widen({&*s.q_norm});
    if (s.k_norm) l.k_norm = widen({&*s.k_norm});
    l.wo = matrix({&s.o});
    if (s.o_bias) l.bo = widen({&*s.o_bias});
    l.post_norm = widen({&s.post_norm});
    l.wgu = matrix({&s.gate, &s.up});
    if (s.gate_bias) l.bgu = widen({&*s.gate_bias, &*s.up_bias});
    l.wd = matrix({&s.down});
    if (s.down_bias) l.bd = widen({&*s.down_bias});
  }
  final_norm_ = widen({&w.final_norm});
  head_ = matrix({&w.lm_head});
  if (options_.linear) {
    // The device copies, in the order a forward pass reads them.
    const int64_t H = c.hidden, qd = c.q_dim(), I = c.intermediate;
    for (const Layer& l : layers_) {
      options_.linear->AddWeight(l.wqkv.f32, qd + 2 * c.kv_dim(), H);
      options_.linear->AddWeight(l.wo.f32, H, qd);
      options_.linear->AddWeight(l.wgu.f32, 2 * I, H);
      options_.linear->AddWeight(l.wd.f32, H, I);
    }
    options_.linear->AddWeight(head_.f32, c.vocab, H);
  }
  // transformers' default RoPE: inv_freq = 1 / theta^(2j/d), every step in fp32.
  const int64_t half = c.head_dim / 2;
  inv_freq_.resize(static_cast<size_t>(half));
  const auto theta = static_cast<float>(c.rope_theta);
  for (int64_t j = 0; j < half; ++j) {
    const float exponent = static_cast<float>(2 * j) / static_cast<float>(c.head_dim);
    inv_freq_[static_cast<size_t>(j)] = 1.0f / std::pow(theta, exponent);
  }
}

FloatQwen3::~FloatQwen3() = default;

int64_t FloatQwen3::weight_bytes() const { return static_cast<int64_t>(weights_->used()); }

void FloatQwen3::Embed(int32_t id, float* out) const {
  const int64_t H = config_.hidden;
  DecodeFloat32(checkpoint_.weights().embed, int64_t{id} * H, {out, static_cast<size_t>(H)});
  RoundSpan(out, H);
}

// Qwen3RMSNorm: x * rsqrt(mean(x^2) + eps) in fp32, cast to the activation dtype, times gamma.
// `out` may be `x`.
void FloatQwen3::RmsNorm(const float* x, const float* gamma, int64_t n, float* out) const {
  const float sum = Dot(x, x, n);
  const float variance = sum / static_cast<float>(n);
  const float r = 1.0f / std::sqrt(variance + static_cast<float>(config_.rms_norm_eps));
  for (int64_t k = 0; k < n; ++k) out[k] = R(gamma[k] * R(x[k] * r));
}

// cos/sin [T, d] for the call's positions: angle = pos * inv_freq (fp32), tiled twice
// (rotate-half).
void FloatQwen3::RopeTables(std::span<const int64_t> positions) {
  const int64_t d = config_.head_dim, half = d / 2;
  Scratch& s = *scratch_;
  Grow(s.cos, positions.size() * static_cast<size_t>(d));
  Grow(s.sin, positions.size() * static_cast<size_t>(d));
  for (size_t t = 0; t < positions.size(); ++t) {
    const auto pos = static_cast<float>(positions[t]);
    for (int64_t j = 0; j < half; ++j) {
      const float angle = pos * inv_freq_[static_cast<size_t>(j)];
      const float c = R(std::cos(angle)), sn = R(std::sin(angle));
      for (int64_t rep : {j, j + half}) {
        s.cos[t * static_cast<size_t>(d) + static_cast<size_t>(rep)] = c;
        s.sin[t * static_cast<size_t>(d) + static_cast<size_t>(rep)] = sn;
      }
    }
  }
}

// Causal attention of one row's new tokens (their q in `qkv`, rows `qkv_stride` apart) over the
// row's cache (already holding this call's keys and values); output [T_row, Q*d]. A row of one
// token (decode) hands its heads to the pool (AttendDecodeRows); longer rows run here, one head
// after the other through BLAS.
void FloatQwen3::Attend(const FloatForwardRow& row, int64_t layer, const float* qkv,
                        int64_t qkv_stride, float* out, int64_t out_stride) {
  const int64_t T = row.n_tokens, S = row.cache->length() + T;
  Scratch& s = *scratch_;
  Grow(s.scores, static_cast<size_t>(T * S));
  Grow(s.sums, static_cast<size_t>(T));
  for (int64_t h = 0; h < config_.n_q_heads; ++h) {
    AttendHead(row, layer, h, qkv, qkv_stride, out, out_stride, s.scores.data(), s.sums.data());
  }
}

// Every (row, head) of the one-token rows of this call, spread over the pool: each is the same
// plain loops on its own scratch whichever thread runs it, so the result does not depend on the
// thread count.
void FloatQwen3::AttendDecodeRows(std::span<const FloatForwardRow> rows,
                                  std::span<const int64_t> first_token, int64_t layer,
                                  const float* qkv, int64_t qkv_stride, float* out,
                                  int64_t out_stride) {
  std::vector<int64_t>& units = scratch_->decode_rows;
  units.clear();
  int64_t longest = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].n_tokens != 1) continue;
    units.push_back(static_cast<int64_t>(i));
    longest = std::max(longest, rows[i].cache->length() + 1);
  }
  if (units.empty()) return;
  std::vector<std::vector<float>>& per_thread = scratch_->thread_scores;
  per_thread.resize(static_cast<size_t>(pool_->size()));
  for (std::vector<float>& v : per_thread) Grow(v, static_cast<size_t>(longest + 1));
  const int64_t heads = config_.n_q_heads;
  os::ParallelFor(*pool_, static_cast<int64_t>(units.size()) * heads,
                  [&](int64_t begin, int64_t end, int thread) {
                    float* scratch = per_thread[static_cast<size_t>(thread)].data();
                    for (int64_t u = begin; u < end; ++u) {
                      const auto r = static_cast<size_t>(units[static_cast<size_t>(u / heads)]);
                      const int64_t t = first_token[r];
                      AttendHead(rows[r], layer, u % heads, qkv + t * qkv_stride, qkv_stride,
                                 out + t * out_stride, out_stride, scratch + 1, scratch);
                    }
                  });
}

// One query head h of one row: scores [T_row, S] and sums [T_row] are its scratch.
void FloatQwen3::AttendHead(const FloatForwardRow& row, int64_t layer, int64_t h, const float* qkv,
                            int64_t qkv_stride, float* out, int64_t out_stride, float* scores,
                            float* sums) const {
  const FloatModelConfig& c = config_;
  const int64_t d = c.head_dim, T = row.n_tokens, p0 = row.cache->length(), S = p0 + T;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const int64_t g = h / c.group();
  const float* K = row.cache->K(layer, g);
  const float* V = row.cache->V(layer, g);
  if (T == 1) {
    // One query (decode): S dot products of length d, on this thread (the pool runs the
    // heads) -- a BLAS call per head would cost more in OpenBLAS's thread hand-off than the
    // arithmetic. The small-batch GEMM's kernel where the CPU has one, else plain loops.
    const float* q = qkv + h * d;
    if (small_gemm_ != SmallGemmIsa::kNone) {
      SmallGemmXWtHere(small_gemm_, q, d, 1, d, K, S, scores, S);
    } else {
      for (int64_t j = 0; j < S; ++j) scores[j] = Dot(q, K + j * d, d);
    }
  } else {
    MatmulXWt(qkv + h * d, qkv_stride, T, d, K, S, scores, S);
  }
  for (int64_t t = 0; t < T; ++t) {
    float* p = scores + t * S;
    const int64_t valid = p0 + t + 1;
    float m = -INFINITY;
    for (int64_t j = 0; j < valid; ++j) {
      p[j] *= scale;
      m = std::max(m, p[j]);
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < valid; ++j) {
      const float e = std::exp(p[j] - m);
      sum += e;
      p[j] = R(e);  // bf16: torch's CPU flash attention multiplies V by bf16 probabilities
    }
    for (int64_t j = valid; j < S; ++j) p[j] = 0.0f;
    sums[t] = sum;
  }
  float* o = out + h * d;
  if (T == 1 && small_gemm_ != SmallGemmIsa::kNone) {
    SmallVecMatHere(small_gemm_, scores, S, V, d, d, o);
  } else if (T == 1) {
    std::fill(o, o + d, 0.0f);
    for (int64_t j = 0; j < S; ++j) {
      const float p = scores[j];
      const float* v = V + j * d;
      for (int64_t k = 0; k < d; ++k) o[k] += p * v[k];
    }
  } else {
    MatmulAB(scores, S, T, S, V, d, d, o, out_stride);
  }
  for (int64_t t = 0; t < T; ++t) {
    const float inv = 1.0f / sums[t];
    for (int64_t k = 0; k < d; ++k) o[t * out_stride + k] = R(o[t * out_stride + k] * inv);
  }
}

void FloatQwen3::Linear(const float* x, int64_t ldx, int64_t m, int64_t k, const Matrix& w,
                        int64_t n, float* y, int64_t ldy) {
  if (options_.linear) {
    options_.linear->Linear(x, ldx, m, k, w.f32, n, y, ldy);
    return;
  }
  if (w.bf16 != nullptr) {
    LinearBf16(x, ldx, m, k, w.bf16, n, y, ldy);
  } else if (m >= 2 && m <= kSmallGemmMaxRows && small_gemm_ != SmallGemmIsa::kNone) {
    SmallGemmXWt(small_gemm_, x, ldx, m, k, w.f32, n, y, ldy, *pool_);
  } else {
    MatmulXWt(x, ldx, m, k, w.f32, n, y, ldy);
  }
}

// bf16 weights: up to 64 rows through the small-batch kernel, which widens each weight as it
// streams it (beyond 16 rows in blocks of 16, each block a pass over the weights); more
// (prefill) through sgemm on blocks of weight rows widened into fp32 scratch. Exact widening
// either way: the products are those of the weights' fp32 values. Measured on the 0.6B shape
// (docs/RESULTS.md): the kernel's passes beat widening for sgemm up to 64 rows, sgemm beyond.
void FloatQwen3::LinearBf16(const float* x, int64_t ldx, int64_t m, int64_t k, const uint16_t* w,
                            int64_t n, float* y, int64_t ldy) {
  if (m <= kSmallGemmBf16MaxRows) {
    for (int64_t r0 = 0; r0 < m; r0 += kSmallGemmMaxRows) {
      SmallGemmXWt(small_gemm_, x + r0 * ldx, ldx, std::min(kSmallGemmMaxRows, m - r0), k, w, n,
                   y + r0 * ldy, ldy, *pool_);
    }
    return;
  }
  // 256 weight rows a block (1 MiB of fp32 at k = 1024: written and read back from L2). The
  // widening runs on this thread: between OpenBLAS's calls the pool's threads only compete
  // with OpenBLAS's for the cores (measured no faster).
  constexpr int64_t kBlock = 256;
  std::vector<float>& wide = scratch_->wide_weights;
  Grow(wide, static_cast<size_t>(std::min(kBlock, n) * k));
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t rows = std::min(kBlock, n - j0);
    const uint16_t* src = w + j0 * k;
    for (int64_t i = 0; i < rows * k; ++i) {
      wide[static_cast<size_t>(i)] = std::bit_cast<float>(static_cast<uint32_t>(src[i]) << 16);
    }
    MatmulXWt(x, ldx, m, k, wide.data(), rows, y + j0, ldy);
  }
}

void FloatQwen3::Forward(std::span<FloatForwardRow> rows) {
  const FloatModelConfig& c = config_;
  const int64_t H = c.hidden, d = c.head_dim, qd = c.q_dim(), kvd = c.kv_dim(), I = c.intermediate,
                V = c.vocab, nqkv = qd + 2 * kvd;
  int64_t T = 0;
  for (const FloatForwardRow& r : rows) {
    DV_CHECK(r.cache != nullptr && r.n_tokens > 0) << "a forward row needs a cache and a token";
    DV_CHECK(r.cache->length() + r.n_tokens <= r.cache->capacity())
        << "KV cache capacity " << r.cache->capacity() << " exceeded";
    DV_CHECK(r.cache->length() + r.n_tokens <= c.max_pos)
        << "position beyond max_position_embeddings (" << c.max_pos << ")";
    for (int64_t t = 0; t < r.n_tokens; ++t) {
      DV_CHECK(r.ids[t] >= 0 && r.ids[t] < V) << "token id " << r.ids[t] << ", vocabulary " << V;
    }
    T += r.n_tokens;
  }
  if (T == 0) return;
  Scratch& s = *scratch_;
  const auto uT = static_cast<size_t>(T);
  Grow(s.x, uT * static_cast<size_t>(H));
  Grow(s.h, uT * static_cast<size_t>(H));
  Grow(s.qkv, uT * static_cast<size_t>(nqkv));
  Grow(s.attn, uT * static_cast<size_t>(qd));
  Grow(s.first_token, rows.size());
  Grow(s.o, uT * static_cast<size_t>(H));
  Grow(s.gu, uT * static_cast<size_t>(2 * I));
  Grow(s.act, uT * static_cast<size_t>(I));
  std::vector<int64_t> positions;
  positions.reserve(uT);
  {
    int64_t t = 0;
    for (const FloatForwardRow& r : rows) {
      for (int64_t i = 0; i < r.n_tokens; ++i, ++t) {
        positions.push_back(r.cache->length() + i);
        Embed(r.ids[i], s.x.data() + t * H);
      }
    }
  }
  RopeTables(positions);
  auto add_bias = [&](float* y, int64_t n, const float* bias) {
    if (bias == nullptr) return;
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t j = 0; j < n; ++j) y[t * n + j] += bias[j];
    }
  };
  // RoPE on one head vector: v * cos + rotate_half(v) * sin, rotate_half(v) = (-v2, v1).
  auto rope = [&](float* v, int64_t t) {
    const float* cs = s.cos.data() + t * d;
    const float* sn = s.sin.data() + t * d;
    const int64_t half = d / 2;
    for (int64_t i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = R(R(a * cs[i]) + R(-b * sn[i]));
      v[i + half] = R(R(b * cs[i + half]) + R(a * sn[i + half]));
    }
  };

  for (int64_t li = 0; li < c.n_layers; ++li) {
    const Layer& l = layers_[static_cast<size_t>(li)];
    for (int64_t t = 0; t < T; ++t)
      RmsNorm(s.x.data() + t * H, l.input_norm, H, s.h.data() + t * H);
    Linear(s.h.data(), H, T, H, l.wqkv, nqkv, s.qkv.data(), nqkv);
    add_bias(s.qkv.data(), nqkv, l.bqkv);
    RoundSpan(s.qkv.data(), T * nqkv);
    // Per token: QK-Norm, RoPE, and the key and value into the row's cache.
    int64_t t = 0;
    for (const FloatForwardRow& r : rows) {
      for (int64_t i = 0; i < r.n_tokens; ++i, ++t) {
        float* q = s.qkv.data() + t * nqkv;
        float* k = q + qd;
        const float* v = k + kvd;
        for (int64_t h = 0; h < c.n_q_heads; ++h) {
          if (l.q_norm) RmsNorm(q + h * d, l.q_norm, d, q + h * d);
          rope(q + h * d, t);
        }
        const int64_t pos = r.cache->length() + i;
        for (int64_t g = 0; g < c.n_kv_heads; ++g) {
          if (l.k_norm) RmsNorm(k + g * d, l.k_norm, d, k + g * d);
          rope(k + g * d, t);
          std::copy(k + g * d, k + (g + 1) * d, r.cache->K(li, g) + pos * d);
          std::copy(v + g * d, v + (g + 1) * d, r.cache->V(li, g) + pos * d);
        }
      }
    }
    t = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const FloatForwardRow& r = rows[i];
      s.first_token[i] = t;
      if (r.n_tokens > 1) Attend(r, li, s.qkv.data() + t * nqkv, nqkv, s.attn.data() + t * qd, qd);
      t += r.n_tokens;
    }
    AttendDecodeRows(rows, s.first_token, li, s.qkv.data(), nqkv, s.attn.data(), qd);
    Linear(s.attn.data(), qd, T, qd, l.wo, H, s.o.data(), H);
    add_bias(s.o.data(), H, l.bo);
    RoundSpan(s.o.data(), T * H);
    for (size_t j = 0; j < uT * static_cast<size_t>(H); ++j) s.x[j] = R(s.x[j] + s.o[j]);

    for (int64_t u = 0; u < T; ++u) RmsNorm(s.x.data() + u * H, l.post_norm, H, s.h.data() + u * H);
    Linear(s.h.data(), H, T, H, l.wgu, 2 * I, s.gu.data(), 2 * I);
    add_bias(s.gu.data(), 2 * I, l.bgu);
    RoundSpan(s.gu.data(), T * 2 * I);
    for (int64_t u = 0; u < T; ++u) {
      const float* gate = s.gu.data() + u * 2 * I;
      const float* up = gate + I;
      float* a = s.act.data() + u * I;
      for (int64_t j = 0; j < I; ++j) {
        const float silu = R(gate[j] / (1.0f + std::exp(-gate[j])));
        a[j] = R(silu * up[j]);
      }
    }
    Linear(s.act.data(), I, T, I, l.wd, H, s.o.data(), H);
    add_bias(s.o.data(), H, l.bd);
    RoundSpan(s.o.data(), T * H);
    for (size_t j = 0; j < uT * static_cast<size_t>(H); ++j) s.x[j] = R(s.x[j] + s.o[j]);
  }

  // Final norm and the LM head, for the positions whose logits are wanted, in one GEMM.
  s.head_dst.clear();
  std::vector<int64_t> head_rows;
  {
    int64_t t = 0;
    for (const FloatForwardRow& r : rows) {
      for (int64_t i = 0; i < r.n_tokens; ++i, ++t) {
        float* dst =
            r.all_logits ? r.all_logits + i * V : (i == r.n_tokens - 1 ? r.last_logits : nullptr);
        if (dst == nullptr) continue;
        head_rows.push_back(t);
        s.head_dst.push_back(dst);
      }
      if (r.all_logits && r.last_logits) {
        head_rows.push_back(t - 1);
        s.head_dst.push_back(r.last_logits);
      }
    }
  }
  const auto n_head = static_cast<int64_t>(head_rows.size());
  if (n_head > 0) {
    Grow(s.head_in, static_cast<size_t>(n_head * H));
    Grow(s.head_out, static_cast<size_t>(n_head * V));
    for (int64_t j = 0; j < n_head; ++j) {
      RmsNorm(s.x.data() + head_rows[static_cast<size_t>(j)] * H, final_norm_, H,
              s.head_in.data() + j * H);
    }
    Linear(s.head_in.data(), H, n_head, H, head_, V, s.head_out.data(), V);
    RoundSpan(s.head_out.data(), n_head * V);
    for (int64_t j = 0; j < n_head; ++j) {
      std::copy(s.head_out.data() + j * V, s.head_out.data() + (j + 1) * V,
                s.head_dst[static_cast<size_t>(j)]);
    }
  }
  for (FloatForwardRow& r : rows) r.cache->length_ += r.n_tokens;
}

int32_t FloatQwen3::GreedyPick(const float* logits) const {
  int64_t best = 0;
  for (int64_t i = 0; i < config_.vocab; ++i) {
    if (std::isnan(logits[i])) return static_cast<int32_t>(i);
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

}  // namespace dv
