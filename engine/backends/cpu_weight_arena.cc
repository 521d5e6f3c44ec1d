#include "engine/backends/cpu_weight_arena.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <new>

namespace dv {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kChunkBytes = size_t{1} << 30;  // address space only: untouched pages cost nothing
constexpr size_t kAlign = 4096;

size_t RoundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

// `size` bytes (a multiple of 2 MiB) of zeroed anonymous memory starting on a 2 MiB boundary.
uint8_t* MapHugeAligned(size_t size, bool huge_pages) {
  // Over-map by one huge page and trim, so the mapping starts on a 2 MiB boundary.
  void* raw = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  auto* p = static_cast<uint8_t*>(raw);
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const size_t lead = (kHugePage - addr % kHugePage) % kHugePage;
  if (lead > 0) ::munmap(p, lead);
  const size_t trail = kHugePage - lead;
  if (trail > 0) ::munmap(p + lead + size, trail);
  uint8_t* base = p + lead;
#if defined(MADV_HUGEPAGE)
  if (huge_pages) ::madvise(base, size, MADV_HUGEPAGE);
#else
  (void)huge_pages;
#endif
  return base;
}

}  // namespace

CpuWeightArena::CpuWeightArena(bool huge_pages) : huge_pages_(huge_pages) {}

CpuWeightArena::~CpuWeightArena() {
  for (const Chunk& c : chunks_) ::munmap(c.base, c.size);
}

uint8_t* CpuWeightArena::Allocate(int64_t bytes) {
  const size_t need = RoundUp(static_cast<size_t>(bytes > 0 ? bytes : 1), kAlign);
  if (chunks_.empty() || chunks_.back().size - chunks_.back().used < need) {
    const size_t size = RoundUp(need > kChunkBytes ? need : kChunkBytes, kHugePage);
    chunks_.push_back({MapHugeAligned(size, huge_pages_), size, 0});
  }
  Chunk& c = chunks_.back();
  uint8_t* out = c.base + c.used;
  c.used += need;
  allocated_ += static_cast<int64_t>(need);
  return out;
}

HugePageBuffer::HugePageBuffer(size_t bytes)
    : size_(bytes), mapped_(RoundUp(bytes > 0 ? bytes : 1, kHugePage)) {
  base_ = MapHugeAligned(mapped_, true);
}

HugePageBuffer::~HugePageBuffer() { ::munmap(base_, mapped_); }

const char* HugePageMode() {
  std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f == nullptr) return "unknown";
  char buf[256] = {};
  const size_t got = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[got] = '\0';
  for (const char* mode : {"always", "madvise", "never"}) {
    char bracketed[16];
    std::snprintf(bracketed, sizeof(bracketed), "[%s]", mode);
    if (std::strstr(buf, bracketed) != nullptr) return mode;
  }
  return "unknown";
}

int64_t AnonHugePageBytes() {
  std::FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    long long v = 0;
    if (std::sscanf(line, "AnonHugePages: %lld kB", &v) == 1) {
      kib = v;
      break;
    }
  }
  std::fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}

}  // namespace dv
