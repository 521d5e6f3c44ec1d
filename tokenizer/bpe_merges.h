#pragma once
// Byte-pair merges: the ranked merge table and the merge loop of a BPE model.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dv::tok {

// One line of tokenizer.json's "merges", as ids: left + right -> merged.
struct MergeRule {
  int32_t left;
  int32_t right;
  int32_t merged;
};

// Open-addressing table from an adjacent id pair to its merge. Immutable once built.
class BpeMerges {
 public:
  struct Merge {
    int32_t rank;  // position in the merges list; lower merges first
    int32_t merged;
  };

  BpeMerges() = default;
  // Rank = index in `rules`. A repeated pair keeps its last rank, as Hugging Face's loader does.
  explicit BpeMerges(std::span<const MergeRule> rules);

  // The merge of the adjacent pair (left, right), or nullptr. O(1) expected.
  const Merge* Find(int32_t left, int32_t right) const;

  size_t size() const { return size_; }

 private:
  static uint64_t Key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  size_t Slot(uint64_t key) const;

  std::vector<uint64_t> keys_;  // kEmptyKey marks a free slot
  std::vector<Merge> merges_;
  size_t mask_ = 0;
  int shift_ = 0;
  size_t size_ = 0;
};

// Merges `symbols` in place: repeatedly the adjacent pair with the lowest rank, the leftmost one on
// ties, until no pair has a merge (Hugging Face's BPE without dropout). Picks ApplyMergesRescan for
// short words and ApplyMergesHeap for long ones; both give identical results.
void ApplyMerges(const BpeMerges& merges, std::vector<int32_t>& symbols);

// O(n^2) worst case, few hash lookups: one per pair plus two per merge. Fast for words.
void ApplyMergesRescan(const BpeMerges& merges, std::vector<int32_t>& symbols);

// O(n log n): linked symbols and a min-heap of (rank, position). For long pieces.
void ApplyMergesHeap(const BpeMerges& merges, std::vector<int32_t>& symbols);

}  // namespace dv::tok
