#include "engine/backends/cpu_weight_arena.h"

#include "os/huge_pages.h"

namespace dv {
namespace {

constexpr size_t kHugePage = os::kHugePageBytes;
constexpr size_t kChunkBytes = size_t{1} << 30;  // address space only: untouched pages cost nothing
constexpr size_t kAlign = 4096;

size_t RoundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

uint8_t* MapHugeAligned(size_t size, bool huge_pages) { return os::MapAligned(size, huge_pages); }

}  // namespace

CpuWeightArena::CpuWeightArena(bool huge_pages) : huge_pages_(huge_pages) {}

CpuWeightArena::~CpuWeightArena() {
  for (const Chunk& c : chunks_) os::UnmapAligned(c.base, c.size);
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

HugePageBuffer::~HugePageBuffer() { os::UnmapAligned(base_, mapped_); }

}  // namespace dv
