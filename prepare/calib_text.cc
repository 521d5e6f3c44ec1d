#include "prepare/calib_text.h"

#include <string_view>

#include "base/sha256.h"
#include "engine/safetensors.h"

namespace dv {

CalibrationSet TokenizeCalibrationText(const std::string& path, const tok::Tokenizer& tokenizer,
                                       int64_t samples, int64_t len, int64_t vocab) {
  const MappedFile file = MappedFile::Open(path);
  if (file.bytes().size() > (size_t{1} << 30)) throw ArtifactError(path + ": larger than 1 GiB");
  const std::string_view text(reinterpret_cast<const char*>(file.bytes().data()),
                              file.bytes().size());
  const std::vector<int32_t> ids = tokenizer.Encode(text);
  CalibrationSet set = ChunkCalibrationIds(ids, samples, len, vocab, path);
  set.sha256 = Sha256Hex(file.bytes());
  return set;
}

}  // namespace dv
