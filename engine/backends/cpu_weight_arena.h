// Memory for the cpu backend's packed weights: anonymous mappings aligned to 2 MiB and advised
// MADV_HUGEPAGE where the OS has transparent huge pages (os/huge_pages.h), so that the weight
// stream of a decode step walks few TLB entries. Allocations are handed out in request order, which
// is the order the model packs its weights and the order a forward pass reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dv {

class CpuWeightArena {
 public:
  // huge_pages: advise MADV_HUGEPAGE (the kernel still decides; see os::HugePageMode()).
  explicit CpuWeightArena(bool huge_pages);
  ~CpuWeightArena();
  CpuWeightArena(const CpuWeightArena&) = delete;
  CpuWeightArena& operator=(const CpuWeightArena&) = delete;

  // `bytes` of uninitialised memory, 4 KiB aligned, valid while the arena lives. Throws
  // std::bad_alloc when the mapping fails.
  uint8_t* Allocate(int64_t bytes);

  int64_t allocated_bytes() const { return allocated_; }
  bool huge_pages() const { return huge_pages_; }

 private:
  struct Chunk {
    uint8_t* base = nullptr;
    size_t size = 0;
    size_t used = 0;
  };
  bool huge_pages_;
  std::vector<Chunk> chunks_;
  int64_t allocated_ = 0;
};

// A zero-filled anonymous mapping, 2 MiB aligned and advised MADV_HUGEPAGE, freed with the
// object. For the K/V cache: a decode step reads every row's cache from cold memory, and on
// 4 KiB pages each head's few KiB cost a page walk and stop the hardware prefetcher at every
// page boundary. Throws std::bad_alloc when the mapping fails.
class HugePageBuffer {
 public:
  explicit HugePageBuffer(size_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return base_; }
  size_t size() const { return size_; }

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0;    // requested bytes
  size_t mapped_ = 0;  // mapped bytes (whole huge pages)
};

}  // namespace dv
