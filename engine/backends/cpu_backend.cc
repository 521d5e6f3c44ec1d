#include "engine/backends/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "base/check.h"
#include "engine/backends/cpu_row_ops.h"
#include "engine/backends/cpu_weight_arena.h"
#include "engine/backends/matmul_i8_cpu.h"
#include "os/huge_pages.h"
#include "os/os_facts.h"
#include "os/thread_pool.h"

namespace dv {
namespace {

// Packed panels live in the backend's arena; the shared_ptr keeps the arena alive as long as
// any packed weight does, whichever is destroyed first.
class CpuPackedWeight final : public PackedWeight {
 public:
  std::shared_ptr<CpuWeightArena> arena;
  const uint8_t* panels = nullptr;
  int64_t panel_count = 0;
};

// Products fused into one parallel region at most (q, k, v is three).
constexpr size_t kMaxFused = 4;

// The K/V cache in huge pages: a decode step reads every row's cache from cold memory, and on
// 4 KiB pages each head's few KiB cost a page walk (cpu_weight_arena.h, HugePageBuffer).
class HugePageKvStorage final : public KvStorage {
 public:
  explicit HugePageKvStorage(size_t bytes) : buffer_(bytes) {
    data_ = buffer_.data();
    size_ = bytes;
  }

 private:
  HugePageBuffer buffer_;
};

class CpuBackendImpl final : public CpuBackend {
 public:
  CpuBackendImpl(int threads, CpuIsa isa, bool huge_pages, int64_t prefetch_bytes, bool regions)
      : isa_(isa),
        kernel_(MatmulI8KernelFor(isa)),
        prefetch_bytes_(prefetch_bytes),
        regions_(regions),
        row_ops_(isa, prefetch_bytes),
        pool_(threads),
        arena_(std::make_shared<CpuWeightArena>(huge_pages)) {}

  std::string_view Name() const override { return "cpu"; }
  int NumThreads() const override { return pool_.size(); }
  CpuIsa isa() const override { return isa_; }
  int64_t packed_weight_bytes() const override { return arena_->allocated_bytes(); }
  bool huge_pages() const override { return arena_->huge_pages(); }
  int64_t prefetch_bytes() const override { return prefetch_bytes_; }
  bool regions() const override { return regions_; }
  const RowOps& row_ops() const override { return row_ops_; }
  std::unique_ptr<KvStorage> AllocateKvStorage(size_t bytes) override {
    return std::make_unique<HugePageKvStorage>(bytes);
  }

  ReadBandwidthSample MeasureReadBandwidth(int64_t bytes, int repeats, bool huge_pages) override {
    bytes = bytes / 4096 * 4096;
    ReadBandwidthSample out;
    out.bytes = bytes;
    out.threads = pool_.size();
    out.huge_pages = huge_pages;
    CpuWeightArena buffer(huge_pages);
    const int64_t huge_before = os::AnonHugePageBytes();
    uint8_t* p = buffer.Allocate(bytes);
    const int64_t pages = bytes / 4096;
    // First touch from the threads that read it, with a varying pattern.
    ParallelFor(pages, [&](int64_t begin, int64_t end, int) {
      for (int64_t i = begin * 4096; i < end * 4096; ++i) p[i] = static_cast<uint8_t>(i * 131);
    });
    const int64_t huge_after = os::AnonHugePageBytes();
    if (huge_before >= 0 && huge_after >= 0) out.huge_page_bytes = huge_after - huge_before;
    std::atomic<uint64_t> sink{0};  // the sums go somewhere observable: reads cannot be elided
    // The best read the machine allows: plain loads, and (where the kernel has it) loads with
    // its software prefetch, whichever is faster, so a prefetching GEMM is not measured against
    // a slower read than it could do.
    const int64_t kernel_prefetch = kernel_.prefetch_bytes;
    for (int r = 0; r <= repeats; ++r) {
      for (const int64_t prefetch : {int64_t{0}, kernel_prefetch}) {
        if (prefetch == 0 && kernel_prefetch > 0 && r % 2 == 1) continue;  // alternate
        const auto t0 = std::chrono::steady_clock::now();
        ParallelFor(pages / 16, [&](int64_t begin, int64_t end, int) {
          const uint64_t sum =
              kernel_.stream_read(p + begin * 65536, (end - begin) * 65536, prefetch);
          sink.fetch_add(sum, std::memory_order_relaxed);
        });
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
        if (r > 0 && (out.best_ns == 0 || ns < out.best_ns)) {
          out.best_ns = ns;
          out.prefetch_bytes = prefetch;
        }
        if (kernel_prefetch == 0) break;
      }
    }
    out.bytes = pages / 16 * 65536;
    return out;
  }

  std::unique_ptr<PackedWeight> PackWeight(const int8_t* w8t, int64_t k, int64_t n) override {
    auto w = std::make_unique<CpuPackedWeight>();
    w->k = k;
    w->n = n;
    w->arena = arena_;
    w->panel_count = MatmulI8Panels(n, kernel_);
    const int64_t bytes = w->panel_count * MatmulI8PanelBytes(k, kernel_);
    uint8_t* out = arena_->Allocate(bytes);
    ParallelFor(w->panel_count, [&](int64_t begin, int64_t end, int) {
      PackWeightPanelsI8(w8t, k, n, kernel_, begin, end, out);
    });
    w->panels = out;
    return w;
  }

  void MatmulI8(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c) override {
    const PackedWeight* const ws[] = {&w};
    int32_t* const cs[] = {c};
    MatmulI8Fused(a, m, ws, cs);
  }

  // One parallel region over the panels of every weight: weights packed one after the other
  // (q, k, v) are read as one contiguous stream.
  void MatmulI8Fused(const int8_t* a, int64_t m, std::span<const PackedWeight* const> w,
                     std::span<int32_t* const> c) override {
    if (w.empty()) return;
    if (w.size() > kMaxFused) {
      Backend::MatmulI8Fused(a, m, w, c);
      return;
    }
    const int64_t k = w[0]->k;
    MatmulI8Args args[kMaxFused];
    int64_t first_panel[kMaxFused + 1] = {0};
    const int8_t* a_rows = PadRows(a, m, k);
    const int64_t lda = (k + 3) / 4 * 4;
    if (kernel_.offset_weights) {
      if (row_sums_.size() < static_cast<size_t>(m)) row_sums_.resize(static_cast<size_t>(m));
      kernel_.row_sums(a_rows, m, lda, row_sums_.data());
    }
    for (size_t i = 0; i < w.size(); ++i) {
      const auto& pw = static_cast<const CpuPackedWeight&>(*w[i]);
      DV_CHECK(pw.k == k) << "MatmulI8Fused: weights of inner dimensions " << k << " and " << pw.k;
      args[i].a = a_rows;
      args[i].m = m;
      args[i].k = k;
      args[i].lda = lda;
      args[i].panels = pw.panels;
      args[i].n = pw.n;
      args[i].row_sums = kernel_.offset_weights ? row_sums_.data() : nullptr;
      args[i].c = c[i];
      args[i].prefetch_bytes = prefetch_bytes_;
      first_panel[i + 1] = first_panel[i] + pw.panel_count;
    }
    const size_t count = w.size();
    ParallelFor(first_panel[count], [&](int64_t begin, int64_t end, int) {
      for (size_t i = 0; i < count; ++i) {
        const int64_t lo = begin > first_panel[i] ? begin : first_panel[i];
        const int64_t hi = end < first_panel[i + 1] ? end : first_panel[i + 1];
        if (lo < hi) kernel_.matmul(args[i], lo - first_panel[i], hi - first_panel[i]);
      }
    });
  }

  // Outside a region, os::ParallelFor's chunks (os/thread_pool.h): one long contiguous piece of
  // a GEMM's panels per thread, then small chunks that balance the finish. Inside, a loop of
  // the region's team: each thread's home slice first, in address order, then what others left.
  void ParallelFor(int64_t n, RangeFn body) override {
    if (team_ != nullptr) {
      team_->For(n, body);
    } else {
      os::ParallelFor(pool_, n, body);
    }
  }

  // A forward pass as one team region (os::Team): its ~100 GEMMs and row loops start without a
  // pool job each, and a thread waiting for the next loop (while thread 0 does a row's serial
  // work) reads the first part of its home slice of the next product's weights into its L2
  // cache (WillMultiply), so that part of the weight stream moves while it would stand still.
  void RunRegion(FunctionRef<void()> fn) override {
    if (team_ != nullptr || pool_.size() == 1 || !regions_) {
      fn();
      return;
    }
    os::TeamRunner::Run(pool_, team_storage_, [&](os::Team& team) {
      team_ = &team;
      struct Leave {
        os::Team*& team;
        ~Leave() { team = nullptr; }
      } leave{team_};
      fn();
    });
  }

  // Each thread's idle read is the start of its home slice of the fused panels, at most
  // idle_read_bytes_ (half its share of L2), within the weight that slice begins in.
  void WillMultiply(std::span<const PackedWeight* const> w) override {
    if (team_ == nullptr || idle_read_bytes_ <= 0 || w.empty()) return;
    int64_t total = 0;
    for (const PackedWeight* pw : w) total += static_cast<const CpuPackedWeight&>(*pw).panel_count;
    const int members = team_->size();
    if (members == 1) return;  // nobody waits while the caller works
    idle_reads_.assign(static_cast<size_t>(members), {});
    for (int t = 0; t < members; ++t) {
      auto [begin, end] = os::Team::HomeRange(total, members, t);
      int64_t first = 0;
      for (const PackedWeight* pw : w) {
        const auto& cw = static_cast<const CpuPackedWeight&>(*pw);
        if (begin < first + cw.panel_count) {
          const int64_t panel_bytes = MatmulI8PanelBytes(cw.k, kernel_);
          const int64_t panels = std::min(end, first + cw.panel_count) - begin;
          idle_reads_[static_cast<size_t>(t)] = {cw.panels + (begin - first) * panel_bytes,
                                                 std::min(panels * panel_bytes, idle_read_bytes_)};
          break;
        }
        first += cw.panel_count;
      }
    }
    team_->PostIdleReads(idle_reads_);
  }

 private:
  CpuIsa isa_;
  const MatmulI8Kernel& kernel_;
  int64_t prefetch_bytes_;
  bool regions_;
  CpuRowOps row_ops_;
  os::ThreadPool pool_;
  std::shared_ptr<CpuWeightArena> arena_;
  // a itself when k is a multiple of 4, else a copy with rows padded to 4 bytes of zeros (the
  // kernels read whole groups of 4).
  const int8_t* PadRows(const int8_t* a, int64_t m, int64_t k) {
    const int64_t lda = (k + 3) / 4 * 4;
    if (lda == k) return a;
    const auto bytes = static_cast<size_t>(m * lda);
    if (padded_a_.size() < bytes) padded_a_.resize(bytes);
    for (int64_t i = 0; i < m; ++i) {
      int8_t* row = padded_a_.data() + i * lda;
      std::memcpy(row, a + i * k, static_cast<size_t>(k));
      std::memset(row + k, 0, static_cast<size_t>(lda - k));
    }
    return padded_a_.data();
  }

  // The team of every region (made once: a region allocates nothing), and the region running
  // now (RunRegion), else null.
  os::Team team_storage_{pool_.size(), kernel_.stream_read, prefetch_bytes_};
  os::Team* team_ = nullptr;
  // Bytes of the next product an idle thread reads ahead: half of one CPU's share of L2 (0 when
  // the OS does not say: then none).
  int64_t idle_read_bytes_ = os::L2CacheBytesPerCpu() / 2 / 64 * 64;
  std::vector<os::Team::IdleRead> idle_reads_;
  std::vector<int32_t> row_sums_;  // per GEMM call, grown once
  std::vector<int8_t> padded_a_;   // activations with rows padded to 4 bytes (k % 4 != 0 only)
};

}  // namespace

int CpuBackendDefaultThreads() { return os::UsableCpuCount(); }

int64_t CheckedPrefetchBytes(int64_t bytes, std::string_view what) {
  if (bytes < 0 || bytes > kMaxPrefetchBytes || bytes % 64 != 0) {
    throw BackendError(std::string(what) + " " + std::to_string(bytes) +
                       ": a multiple of 64 bytes from 0 to " + std::to_string(kMaxPrefetchBytes) +
                       " was expected");
  }
  return bytes;
}

int64_t ParsePrefetchBytes(std::string_view text, int64_t kernel_default) {
  const std::string what = "DETVERIFY_PREFETCH='" + std::string(text) + "'";
  if (text == "off") return 0;
  if (text == "default") return kernel_default;
  int64_t bytes = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw BackendError(what + ": expected off, default or a distance in bytes (a multiple of 64 " +
                       "from 0 to " + std::to_string(kMaxPrefetchBytes) + ")");
  }
  return CheckedPrefetchBytes(bytes, what);
}

std::unique_ptr<CpuBackend> MakeCpuBackend(const CpuBackendOptions& options) {
  CpuIsa isa = CpuIsa::kScalar;
  if (options.isa.has_value()) {
    isa = *options.isa;
    RequireCpuIsa(isa);
  } else {
    isa = CpuIsaFromEnvironment();
  }
  const int threads = options.threads > 0 ? options.threads : CpuBackendDefaultThreads();
  const int64_t kernel_default = MatmulI8KernelFor(isa).prefetch_bytes;
  int64_t prefetch = kernel_default;
  if (options.prefetch_bytes.has_value()) {
    prefetch = CheckedPrefetchBytes(*options.prefetch_bytes, "prefetch distance");
  } else if (const char* env = std::getenv("DETVERIFY_PREFETCH"); env != nullptr && *env != 0) {
    prefetch = ParsePrefetchBytes(env, kernel_default);
  }
  // A kernel without software prefetch ignores the distance; say so by recording 0.
  if (kernel_default == 0) prefetch = 0;
  bool regions = options.regions;
  if (const char* env = std::getenv("DETVERIFY_CPU_REGIONS"); env != nullptr && *env != 0) {
    const std::string_view v = env;
    if (v != "on" && v != "off") {
      throw BackendError("DETVERIFY_CPU_REGIONS='" + std::string(v) + "': expected on or off");
    }
    regions = regions && v == "on";
  }
  return std::make_unique<CpuBackendImpl>(threads, isa, options.huge_pages, prefetch, regions);
}

}  // namespace dv
