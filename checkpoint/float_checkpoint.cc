#include "checkpoint/float_checkpoint.h"

#include <algorithm>

#include "base/sha256.h"
#include "os/mapped_pages.h"

namespace dv {

FloatCheckpoint::FloatCheckpoint(std::string source, FloatWeights weights,
                                 std::vector<MappedFile> maps,
                                 std::vector<std::vector<uint8_t>> owned,
                                 std::vector<std::string> weight_files)
    : source_(std::move(source)),
      weights_(std::move(weights)),
      maps_(std::move(maps)),
      owned_(std::move(owned)),
      weight_files_(std::move(weight_files)) {}

const std::string& FloatCheckpoint::ContentSha256() const {
  if (!sha256_.empty()) return sha256_;
  if (weight_files_.size() == 1) {
    sha256_ = Sha256FileHex(weight_files_[0]);
    return sha256_;
  }
  std::vector<std::string> files = weight_files_;
  std::sort(files.begin(), files.end());
  std::string listing;
  for (const std::string& f : files) {
    const size_t slash = f.find_last_of('/');
    listing +=
        Sha256FileHex(f) + "  " + (slash == std::string::npos ? f : f.substr(slash + 1)) + "\n";
  }
  sha256_ = Sha256Hex({reinterpret_cast<const uint8_t*>(listing.data()), listing.size()});
  return sha256_;
}

void FloatCheckpoint::ReleasePages(const FloatTensor& t) const {
  const std::span<const uint8_t> bytes = t.bytes;
  const bool mapped = std::any_of(maps_.begin(), maps_.end(), [&](const MappedFile& m) {
    const auto lo = reinterpret_cast<uintptr_t>(m.bytes().data());
    const auto at = reinterpret_cast<uintptr_t>(bytes.data());
    return !m.bytes().empty() && at >= lo && at + bytes.size() <= lo + m.bytes().size();
  });
  if (!mapped) return;  // owned buffers are anonymous memory, which the advice would zero
  // Only whole pages inside the view; the next access reads them back from the page cache.
  os::ReleaseFilePages(bytes.data(), bytes.size());
}

}  // namespace dv
